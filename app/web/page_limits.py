"""The request rate of signed-in pages, and what a page says past a limit.

Every signed-in page draws on its session's bucket (a user's sessions share the user's) and its
project's (the one the project's API
keys draw on too). The pages open to everyone (signing in, single sign-on, setting a password)
draw on their address's bucket: each may write a row (a sign-in attempt, a session). What is
never limited, so nobody is locked out: static files, /health, /ready, /metrics and signing out
(signing in with a key is one of its project's requests too: each writes a session).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler

from agentlasso.domain.web import WebSession
from agentlasso.errors import TooManyRequests
from agentlasso.http.auth import client_ip, platform_of
from agentlasso.web.rendering import page
from agentlasso.web.sessions import SESSION_COOKIE

# Signing out must work however busy the session was.
NEVER_LIMITED = frozenset({"sign_out"})


async def within_page_rate(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    """Guard, after the session's: the session and its project are within their request rates."""
    if handler.name in NEVER_LIMITED:
        return
    session: WebSession = connection.state.session
    token = connection.cookies.get(SESSION_COOKIE) or ""
    await platform_of(connection).limits.admit_page(session.project_id, token, session.user_id)


async def within_open_page_rate(
    connection: ASGIConnection[Any, Any, Any, Any], _handler: BaseRouteHandler
) -> None:
    """Guard of the open pages: their address is within its request rate."""
    await platform_of(connection).limits.admit_open_page(client_ip(connection))


def too_many_requests(request: Request[Any, Any, Any], exc: TooManyRequests) -> Response[Any]:
    """A 429 with Retry-After: a page saying when to try again, or, for htmx (a live check, a
        Preview, a filter), a notice in the page's place for notices (base.html), leaving the rest,
    and what was typed, as it was."""
    headers = {"retry-after": str(exc.retry_after_s)}
    if request.headers.get("hx-request"):
        response = page(request, "_rate_limited.html", status_code=429, detail=exc.detail)
        response.headers.update({
            **headers, "hx-retarget": "#notices", "hx-reswap": "innerHTML",
            "hx-reselect": ".rate-limited",
        })  # fmt: skip
        return response
    again = request.method == "GET"
    # Nobody is signed in on the open pages: their way back is the sign-in page.
    signed_in = getattr(request.state, "session", None) is not None
    back, back_label = (
        ("/datasets", "Back to your datasets") if signed_in else ("/login", "Back to sign-in")
    )
    if again:
        back = str(request.url.path) + (f"?{request.url.query}" if request.url.query else "")
        back_label = "Try again"
    response = page(
        request, "error.html", status_code=429, title=exc.title, detail=exc.detail,
        back=back, back_label=back_label,
    )  # fmt: skip
    response.headers.update(headers)
    return response


def with_retry_after(response: Response[Any], exc: TooManyRequests) -> Response[Any]:
    """The response (a form shown again, saying why), with when to try again."""
    response.headers["retry-after"] = str(exc.retry_after_s)
    return response
