"""/login and /logout: an email and password, a project key or a one-time link in, a session
cookie out."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromQuery

from agentlasso.errors import NotAuthenticated, TooManyRequests
from agentlasso.http.auth import PlatformDep, client_ip, platform_of
from agentlasso.services import sso, web_sessions
from agentlasso.services.password_sign_in import sign_in_with_password
from agentlasso.services.platform import Platform
from agentlasso.services.web_sessions import NewSession
from agentlasso.web.page_limits import with_retry_after
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import (
    SESSION_COOKIE,
    login_form_is_genuine,
    login_form_token,
    safe_next,
    with_login_cookie,
    with_session_cookie,
    without_session_cookie,
)


class SignInPages(Controller):
    """Signing in: open to everyone."""

    path = "/login"

    @get("/", name="login")
    async def login_page(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        token: FromQuery[str | None] = None,
        next: FromQuery[str | None] = None,
    ) -> Response[Any]:
        """The sign-in form; with `?token=` (the link `agentlasso dev` prints), the page whose
        button signs in with it. Opening the link uses nothing up."""
        if token:
            try:
                project_name, email = await web_sessions.link_opens(platform, token)
            except NotAuthenticated as exc:
                return _form(request, next, message=exc.detail, status_code=401)
            return _link_form(request, token, project_name, email, next)
        return _form(request, next)

    @post("/link", name="sign_in_with_link")
    async def sign_in_with_link(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Sign in with a one-time link's token, from the button of the page the link opens."""
        form = await request.form()
        next_path = form.get("next")
        if not login_form_is_genuine(request, form.get("login_token")):
            message = "This sign-in form is out of date: open the link again."
            return _form(request, next_path, message=message, status_code=403)
        try:
            session = await web_sessions.sign_in_with_link(
                platform, str(form.get("token") or ""), client_ip(request)
            )
        except NotAuthenticated as exc:
            return _form(request, next_path, message=exc.detail, status_code=401)
        return await _signed_in(request, platform, session, safe_next(next_path))

    @post("/password", name="sign_in_with_password")
    async def sign_in_with_password(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Sign in with an email and a password."""
        form = await request.form()
        next_path = form.get("next")
        email = str(form.get("email") or "")
        if not login_form_is_genuine(request, form.get("login_token")):
            message = "This sign-in form is out of date: try again."
            return _form(request, next_path, message=message, status_code=403, email=email)
        password = str(form.get("password") or "")
        try:
            session = await sign_in_with_password(platform, email, password, client_ip(request))
        except NotAuthenticated as exc:
            return _form(request, next_path, message=exc.detail, status_code=401, email=email)
        return await _signed_in(request, platform, session, safe_next(next_path))

    @post("/", name="sign_in")
    async def sign_in(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Sign in with a project key."""
        form = await request.form()
        next_path = form.get("next")
        if not login_form_is_genuine(request, form.get("login_token")):
            message = "This sign-in form is out of date: try again."
            return _form(request, next_path, message=message, status_code=403)
        try:
            session = await web_sessions.sign_in_with_key(
                platform, str(form.get("api_key") or ""), client_ip(request)
            )
        except NotAuthenticated as exc:
            errors = {"api_key": exc.detail}
            return _form(request, next_path, errors=errors, status_code=422)
        except TooManyRequests as exc:
            refused = _form(request, next_path, errors={"api_key": exc.detail}, status_code=429)
            return with_retry_after(refused, exc)
        return await _signed_in(request, platform, session, safe_next(next_path))


@post("/logout", name="sign_out")
async def sign_out(request: Request[Any, Any, Any], platform: PlatformDep) -> Response[Any]:
    """End the session; back to the sign-in page."""
    await web_sessions.sign_out(platform, request.cookies.get(SESSION_COOKIE))
    return without_session_cookie(redirect(request, "/login"))


async def _signed_in(
    request: Request[Any, Any, Any], platform: Platform, session: NewSession, location: str
) -> Response[Any]:
    """On to `location` with the new session; the browser's previous one, if any, ended."""
    await web_sessions.sign_out(platform, request.cookies.get(SESSION_COOKIE))
    return with_session_cookie(request, redirect(request, location), session)


def _form(
    request: Request[Any, Any, Any],
    next_path: object,
    *,
    message: str | None = None,
    errors: dict[str, str] | None = None,
    status_code: int = 200,
    email: str = "",
) -> Response[Any]:
    token = login_form_token(request)
    response = page(
        request,
        "login.html",
        status_code=status_code,
        session=None,
        login_token=token,
        next=safe_next(next_path),
        message=message,
        errors=errors or {},
        email=email,
        sso=sso.is_configured(platform_of(request).settings),
    )
    return with_login_cookie(request, response, token)


def _link_form(
    request: Request[Any, Any, Any],
    token: str,
    project_name: str,
    email: str | None,
    next_path: object,
) -> Response[Any]:
    """The page a sign-in link opens: which project, and the button that signs in. Its URL
    holds the token: the page sends no Referer, even to this site."""
    login_token = login_form_token(request)
    response = page(
        request,
        "login_link.html",
        session=None,
        login_token=login_token,
        token=token,
        project_name=project_name,
        email=email,
        next=safe_next(next_path),
    )
    response.headers["referrer-policy"] = "no-referrer"
    return with_login_cookie(request, response, login_token)
