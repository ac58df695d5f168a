"""The web app: server-rendered pages for the people who write golden cases and read runs.

Pages call the same services as the API (no second copy of any rule), are signed in with a
session cookie, carry a CSRF token in every form, and work without JavaScript for reading;
vendored htmx makes editing and searching smooth.
"""
