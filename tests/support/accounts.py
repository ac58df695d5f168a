"""Users for tests: made as `agentlasso users create` makes them, signed in as a person does."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs, urlsplit

import httpx

from agentlasso.services.accounts import create_user_at
from tests.support.web import hidden_field

PASSWORD = "correct horse battery staple"


def new_email() -> str:
    """An address no other test uses."""
    return f"ana-{uuid.uuid4().hex[:10]}@example.com"


def token_of(link: str) -> str:
    """The token in a set-password link."""
    return parse_qs(urlsplit(link).query)["token"][0]


async def new_user_token(database_url: str, email: str, organisation: str) -> str:
    """A new owner of the organisation; their set-password link's token."""
    created = await create_user_at(database_url, email, organisation, "owner")
    return created.password_token


async def set_password(
    web: httpx.AsyncClient, token: str, password: str, again: str | None = None
) -> httpx.Response:
    """Fill in the set-password form the link opens; the form's answer."""
    form_page = await web.get("/set-password", params={"token": token})
    assert form_page.status_code == 200, form_page.text
    fields = {
        "token": token,
        "login_token": hidden_field(form_page.text, "login_token"),
        "password": password,
        "password_again": password if again is None else again,
    }
    return await web.post("/set-password", data=fields)


async def sign_in_with_password(
    web: httpx.AsyncClient, email: str, password: str
) -> httpx.Response:
    """Fill in the sign-in form's email and password; the form's answer."""
    form_page = await web.get("/login")
    assert form_page.status_code == 200, form_page.text
    fields = {
        "email": email,
        "password": password,
        "login_token": hidden_field(form_page.text, "login_token"),
    }
    return await web.post("/login/password", data=fields)
