"""/login/sso: start a single sign-on at the identity provider, and its callback.

The browser that starts a sign-in keeps a random cookie (HttpOnly, under /login/sso, Lax so
the provider's redirect back carries it); the callback goes on only with that cookie, so a
sign-in started elsewhere cannot be finished in this browser (login CSRF).
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.datastructures import Cookie
from litestar.params import FromQuery

from agentlasso.http.auth import PlatformDep, client_ip
from agentlasso.services import sso
from agentlasso.services.platform import Platform
from agentlasso.services.web_sessions import sign_out
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import SESSION_COOKIE, safe_next, with_session_cookie

SSO_COOKIE = "agentlasso_sso"
SSO_PATH = "/login/sso"
CALLBACK_PATH = "/login/sso/callback"
NOT_CONFIGURED = "Single sign-on is not set up on this server: sign in with your email."


class SsoPages(Controller):
    """Single sign-on: open to everyone, like /login."""

    path = SSO_PATH

    @get("/", name="sso_start")
    async def start(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        next: FromQuery[str | None] = None,
    ) -> Response[Any]:
        """Off to the identity provider, a new state, nonce and PKCE verifier kept here."""
        if not sso.is_configured(platform.settings):
            return _refused(request, NOT_CONFIGURED, 404)
        try:
            started = await sso.start(platform, redirect_uri(request, platform), safe_next(next))
        except sso.SsoRefused as exc:
            return _refused(request, exc.detail, 503)
        response = redirect(request, started.location)
        response.set_cookie(
            Cookie(
                key=SSO_COOKIE,
                value=started.browser_token,
                max_age=int(sso.ATTEMPT_VALID_FOR.total_seconds()),
                httponly=True,
                samesite="lax",
                secure=request.url.scheme == "https",
                path=SSO_PATH,
            )
        )
        return response

    @get("/callback", name="sso_callback")
    async def callback(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        code: FromQuery[str | None] = None,
    ) -> Response[Any]:
        """Where the provider sends the browser back: signed in, or a page saying why not
        (`state` is read from the query itself: the name is Litestar's own)."""
        state = str(request.query_params.get("state") or "")
        if not sso.is_configured(platform.settings):
            return _refused(request, NOT_CONFIGURED, 404)
        try:
            session, next_path = await sso.finish(
                platform, state=state, code=code, browser_token=request.cookies.get(SSO_COOKIE),
                redirect_uri=redirect_uri(request, platform), ip=client_ip(request),
            )  # fmt: skip
        except sso.SsoRefused as exc:
            status = _status(exc.reason)
            return _without_sso_cookie(_refused(request, exc.detail, status))
        await sign_out(platform, request.cookies.get(SESSION_COOKIE))
        response = with_session_cookie(request, redirect(request, next_path), session)
        return _without_sso_cookie(response)


def redirect_uri(request: Request[Any, Any, Any], platform: Platform) -> str:
    """The callback's address as registered at the provider: AGENTLASSO_OIDC_REDIRECT_URL, else
    under AGENTLASSO_PUBLIC_URL, else under the request's own origin."""
    settings = platform.settings
    if settings.oidc_redirect_url:
        return settings.oidc_redirect_url
    base = settings.public_url or str(request.base_url)
    return base.rstrip("/") + CALLBACK_PATH


def _status(reason: str) -> int:
    """502 when the provider failed us, 403 for who was refused, 401 for an answer not trusted."""
    if reason == "provider_unreachable":
        return 502
    return 403 if reason in sso.MESSAGES else 401


def _refused(request: Request[Any, Any, Any], message: str, status_code: int) -> Response[Any]:
    return page(request, "sso_refused.html", status_code=status_code, session=None, message=message)


def _without_sso_cookie(response: Response[Any]) -> Response[Any]:
    response.delete_cookie(SSO_COOKIE, path=SSO_PATH)
    return response
