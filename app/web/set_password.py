"""/set-password: the page the link `agentlasso users create` prints (or an invitation's) opens,
open to everyone who holds the link; setting the password signs the user in."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromQuery

from agentlasso.errors import Conflict, InvalidInput, NotAuthenticated
from agentlasso.http.auth import PlatformDep, client_ip
from agentlasso.services import accounts
from agentlasso.services.passwords import MAX_LENGTH, MIN_LENGTH
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import (
    login_form_is_genuine,
    login_form_token,
    with_login_cookie,
    with_session_cookie,
)

PATH = "/set-password"


class SetPasswordPages(Controller):
    """Setting a password with a one-time link."""

    path = PATH

    @get("/", name="set_password")
    async def set_password_page(
        self, request: Request[Any, Any, Any], platform: PlatformDep, token: FromQuery[str] = ""
    ) -> Response[Any]:
        """The form, for the email the link is for; opening it uses nothing up."""
        try:
            email = await accounts.password_link_email(platform, token)
        except NotAuthenticated as exc:
            return _spent(request, exc.detail)
        return _form(request, token, email)

    @post("/", name="set_password_with_link")
    async def set_password(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Set the password, spending the link, and go on signed in."""
        form = await request.form()
        token = str(form.get("token") or "")
        password = str(form.get("password") or "")
        try:
            email = await accounts.password_link_email(platform, token)
        except NotAuthenticated as exc:
            return _spent(request, exc.detail)
        if not login_form_is_genuine(request, form.get("login_token")):
            message = "This form is out of date: open the link again."
            return _form(request, token, email, message=message, status_code=403)
        if password != str(form.get("password_again") or ""):
            errors = {"password_again": "The two passwords are not the same."}
            return _form(request, token, email, errors=errors, status_code=422)
        try:
            session = await accounts.set_password_with_link(
                platform, token, password, client_ip(request)
            )
        except InvalidInput as exc:
            return _form(request, token, email, errors={"password": exc.detail}, status_code=422)
        except (NotAuthenticated, Conflict) as exc:
            return _spent(request, exc.detail)
        return with_session_cookie(request, redirect(request, "/"), session)


def _spent(request: Request[Any, Any, Any], detail: str) -> Response[Any]:
    return page(
        request,
        "set_password.html",
        status_code=401,
        session=None,
        spent=detail,
        email=None,
        errors={},
    )


def _form(
    request: Request[Any, Any, Any],
    token: str,
    email: str,
    *,
    message: str | None = None,
    errors: dict[str, str] | None = None,
    status_code: int = 200,
) -> Response[Any]:
    """The form; its URL holds the token, so the page sends no Referer."""
    login_token = login_form_token(request)
    response = page(
        request,
        "set_password.html",
        status_code=status_code,
        session=None,
        spent=None,
        token=token,
        email=email,
        login_token=login_token,
        message=message,
        errors=errors or {},
        min_length=MIN_LENGTH,
        max_length=MAX_LENGTH,
    )
    response.headers["referrer-policy"] = "no-referrer"
    return with_login_cookie(request, response, login_token, path=PATH)
