"""Why the scope and role table (app/http/permissions.py) says what it says, in words: what
docs/reference/scopes.md shows beside the table."""

from __future__ import annotations

from typing import Final

REASONS: Final = """\
- Every GET needs `read`; `ci` and `admin` include it.
- Runs need `ci`: starting one (CI mode or server mode, so `agentlasso ci` and `agentlasso
  run` work with a `ci` key), cancelling it, posting its results, a simulated user's next
  turn; so do the calls that only try the agent or the checks (invoke, preview), since a `ci`
  key already starts runs that call the agent and the judge.
- Writing datasets and test cases needs `admin`. A `ci` key lives in a CI system that builds
  pull requests, and a pull request must not be able to rewrite the golden cases its own gate
  is graded against; there is no narrower writer's scope to give.
- Agents (their URLs and secret headers), API keys, the judge key, trace retention and
  deleting need `admin`. OpenTelemetry trace export needs `ingest`: give your exporter an
  `ingest` key, which can read nothing back.
- Trace rules and alerts need `admin`: a rule spends the project's judge budget on production
  traces, and an alert posts to a webhook with a secret, as an agent's URL and headers do.
- Review (queueing items, labelling them) needs `admin`: a label is what the judge is measured
  against, and a pull request's `ci` key must not be able to vouch for its own judge.
- `OPTIONS` answers any live key or session: it tells only which methods a path takes.

Roles, for a signed-in user (their organisation's role, or their role in the project when one
is set for it):
- `viewer` reads everything of the project: every page but the audit log.
- `member` also writes what the team's evaluation is made of: datasets, cases (creating,
  changing, deleting, importing, generating, reviewing drafts, making cases of traces), runs
  (start, cancel, re-run, send the agent a test message), and reviews: queueing results and
  labelling them. A person who writes golden cases is
  accountable by name in the audit log, which a shared CI key is not; so the role may do what
  the `ci` scope may not.
- `admin` also sets up the project: agents (their URLs and secret headers), API keys, the judge
  key, members, trace retention, and reads the audit log.
- `owner` also holds the organisation: only an owner makes or unmakes an owner. Owner is
  organisation-wide: it is never a role set for one project.
- Inviting, changing a member's organisation role and removing a member change the
  organisation: they need the role `admin` in the organisation itself (a role set for one
  project does not count). Setting a member's role in this project needs `admin` here.
- Settings -> Members is for people (the routes marked "a person"): a session opened with a key,
  of any scope, or with a project's sign-in link is refused it. A leaked key must not be able
  to invite its holder into the organisation.
- The API is for keys: a route's role says what a page doing the same needs.
"""
