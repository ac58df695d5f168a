"""Who is signed in: the session cookie, the guard every page has, and CSRF on every form.

The cookie holds a random token (HttpOnly, SameSite=Lax, Secure over https); the session row
holds the project and a CSRF token that every state-changing request must send back, as the
form field `csrf_token` or the `x-csrf-token` header (htmx sends it from base.html).
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any
from urllib.parse import quote

from litestar import Request, Response
from litestar.connection import ASGIConnection
from litestar.datastructures import Cookie
from litestar.handlers import BaseRouteHandler

from agentlasso.domain.audit import Caller
from agentlasso.domain.web import WebSession
from agentlasso.errors import AgentLassoError
from agentlasso.http.auth import client_ip, method_of, platform_of
from agentlasso.http.permissions import require_person, require_role, require_scope
from agentlasso.services import web_sessions
from agentlasso.services.web_sessions import IDLE, LIFETIME, NewSession

SESSION_COOKIE = "agentlasso_session"
# Signing in is protected too: the login form carries a token its own cookie must match, so
# another site cannot sign a browser in to the other site's project.
LOGIN_COOKIE = "agentlasso_login"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Printable ASCII a URL's path and query may hold as they are (`%` too: escapes stay escapes).
_URL_PUNCTUATION = "!#$%&'()*+,/:;=?@[]~"


class SignInRequired(AgentLassoError):
    """No live session: the browser goes to /login, and back to where it was afterwards."""

    title = "Sign in"


class ForgedRequest(AgentLassoError):
    """A state-changing request without the session's CSRF token."""

    title = "Request refused"


async def require_session(
    connection: ASGIConnection[Any, Any, Any, Any], _handler: BaseRouteHandler
) -> None:
    """Guard: a live session whose user's role (or, opened with a key, whose key's scope)
    allows the page, remembered for it; SignInRequired, BeyondRole or BeyondScope otherwise."""
    token = connection.cookies.get(SESSION_COOKIE)
    session = await web_sessions.current_session(platform_of(connection), token)
    if session is None:
        raise SignInRequired("Your session has ended: sign in again.")
    # The same table as the API's (app/http/permissions.py), held to the user's role, or to the
    # key signed in with.
    method, path_template = method_of(connection), connection.scope["path_template"]
    if session.role is not None:
        require_role(session.role, method, path_template)
    else:
        require_person(method, path_template)
        require_scope(session.scope, method, path_template)
    connection.state.session = session


async def check_csrf(request: Request[Any, Any, Any]) -> None:
    """Before-request hook: a state-changing request carries the session's CSRF token."""
    if request.method in SAFE_METHODS:
        return
    session: WebSession = request.state.session
    sent = request.headers.get("x-csrf-token")
    if not sent:
        form = await request.form()
        sent = form.get("csrf_token")
    if not same_secret(sent, session.csrf_token):
        raise ForgedRequest(
            "This form is out of date (or did not come from this site): reload the page and "
            "try again."
        )


def session_of(request: Request[Any, Any, Any]) -> WebSession:
    """The signed-in session the guard found."""
    session: WebSession = request.state.session
    return session


def caller_of(request: Request[Any, Any, Any]) -> Caller:
    """Who the signed-in session acts as, and from where: for the audit log."""
    return Caller(actor=session_of(request).actor, ip=client_ip(request))


def with_session_cookie(
    request: Request[Any, Any, Any], response: Response[Any], session: NewSession
) -> Response[Any]:
    """The response, setting the new session's cookie (and dropping the login form's)."""
    response.set_cookie(
        Cookie(
            key=SESSION_COOKIE,
            value=session.token,
            max_age=int(LIFETIME.total_seconds()),
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
            path="/",
        )
    )
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    return response


def without_session_cookie(response: Response[Any]) -> Response[Any]:
    """The response, removing the session cookie."""
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


def login_form_token(request: Request[Any, Any, Any]) -> str:
    """The token the login form carries: the one its cookie holds, or a new one."""
    kept = request.cookies.get(LOGIN_COOKIE)
    return kept if kept and len(kept) <= 100 else secrets.token_urlsafe(32)


def with_login_cookie(
    request: Request[Any, Any, Any], response: Response[Any], token: str, path: str = "/login"
) -> Response[Any]:
    """The response, keeping the login form's token in its cookie for the time of a sign-in
    (the set-password form keeps its own under its own path)."""
    response.set_cookie(
        Cookie(
            key=LOGIN_COOKIE,
            value=token,
            max_age=int(IDLE.total_seconds()),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path=path,
        )
    )
    return response


def login_form_is_genuine(request: Request[Any, Any, Any], sent: object) -> bool:
    """Whether the login form's token matches its cookie."""
    kept = request.cookies.get(LOGIN_COOKIE)
    return bool(kept) and same_secret(sent, kept or "")


def same_secret(sent: object, kept: str) -> bool:
    """Whether a client's text is the secret, compared in constant time.

    As bytes: `hmac.compare_digest` raises on a `str` that is not ASCII, and a client may send
    any text; a lone surrogate (from a decoded query) is replaced, so it can never match."""
    if not isinstance(sent, str):
        return False
    as_sent = sent.encode("utf-8", "replace")
    return hmac.compare_digest(as_sent, kept.encode("utf-8", "replace"))


def sign_in_url(next_path: str) -> str:
    """/login, coming back to `next_path` afterwards."""
    return f"/login?next={quote(next_path, safe='/')}"


def safe_next(value: object) -> str:
    """Where to go after signing in: a path on this site only (never another host).

    Browsers drop tabs and line breaks from a URL and read a backslash as a slash, so a slash,
    a tab and a slash, or a slash and a backslash, lead to another host: a path holding any of
    them is refused, not cleaned. What is not printable ASCII is percent-encoded (as UTF-8): it
    becomes a Location header, which holds Latin-1 only."""
    if not isinstance(value, str) or not value.startswith("/") or value.startswith("//"):
        return "/"
    if "\\" in value or any(ord(character) < 0x20 or ord(character) == 0x7F for character in value):
        return "/"
    return quote(value, safe=_URL_PUNCTUATION, errors="replace")
