"""The web app as a browser without JavaScript drives it: cookies, forms, and what a page shows."""

from __future__ import annotations

import contextlib
import html
import re
import secrets
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from agentlasso.services.api_keys import hash_key

SESSION_COOKIE = "agentlasso_session"
PAGE_ACCEPT = "text/html,application/xhtml+xml,*/*;q=0.8"


@contextlib.asynccontextmanager
async def browser(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A cookie-keeping client that asks for pages and does not follow redirects."""
    async with httpx.AsyncClient(
        base_url=base_url, follow_redirects=False, headers={"accept": PAGE_ACCEPT}, timeout=60
    ) as web:
        yield web


def hidden_field(page: str, name: str) -> str:
    """The value of the page's first field called `name` (as the browser would post it)."""
    found = re.search(rf'name="{re.escape(name)}"[^>]*?value="([^"]*)"', page)
    assert found, f"no field {name!r} on the page"
    return html.unescape(found.group(1))


def shown_text(page: str) -> str:
    """The page's text as a person reads it: tags dropped, entities decoded, spaces joined."""
    without_tags = re.sub(r"<[^>]+>", " ", page)
    return " ".join(html.unescape(without_tags).split())


async def sign_in(web: httpx.AsyncClient, key: str, next_path: str | None = None) -> httpx.Response:
    """Fill in the sign-in form with the key, as a person would; the form's answer."""
    form_page = await web.get("/login")
    assert form_page.status_code == 200, form_page.text
    fields = {"api_key": key, "login_token": hidden_field(form_page.text, "login_token")}
    if next_path is not None:
        fields["next"] = next_path
    return await web.post("/login", data=fields)


async def signed_in_csrf(web: httpx.AsyncClient, key: str) -> str:
    """Sign in with the key; the CSRF token the session's forms carry."""
    answer = await sign_in(web, key)
    assert answer.status_code == 303, answer.text
    return await csrf_token(web)


async def csrf_token(web: httpx.AsyncClient) -> str:
    """The CSRF token the signed-in session's forms carry."""
    listing = await web.get("/datasets")
    assert listing.status_code == 200, listing.text
    return hidden_field(listing.text, "csrf_token")


def lands_on(response: httpx.Response) -> str:
    """Where a browser goes after this answer (a 303, or htmx's HX-Redirect), as a browser
    resolves it: tabs and line breaks dropped, relative to the page's URL."""
    location = response.headers.get("location") or response.headers.get("hx-redirect")
    assert location is not None, f"no redirect: {response.status_code} {response.text[:200]}"
    cleaned = re.sub(r"[\t\n\r]", "", location).strip()
    return urljoin(str(response.request.url), cleaned)


def is_same_site(response: httpx.Response) -> bool:
    """Whether the redirect leads to the same scheme, host and port as the request."""
    target = urlsplit(lands_on(response))
    here = urlsplit(str(response.request.url))
    return (target.scheme, target.netloc) == (here.scheme, here.netloc)


def path_of(response: httpx.Response) -> str:
    """The path (and query) the redirect leads to, when it stays on this site."""
    assert is_same_site(response), f"leaves the site: {lands_on(response)}"
    target = urlsplit(lands_on(response))
    return target.path + (f"?{target.query}" if target.query else "")


async def project_of(connection: Any, key: str) -> Any:
    """The project a key belongs to (its id)."""
    return await connection.fetchval(
        "SELECT project_id FROM api_keys WHERE key_hash = $1", hash_key(key)
    )


def case_fields(**overrides: str) -> dict[str, str]:
    """A new case as the rubric editor posts it: an input and one critical text check."""
    return {
        "input": "Where is my refund?",
        "input_format": "text",
        "evaluation_type": "SCORE",
        "min_confidence": "70",
        "checks-0-type": "output_contains",
        "checks-0-value": "refund",
        "checks-0-severity": "critical",
        "form_id": secrets.token_urlsafe(16),
        "action": "save",
        **overrides,
    }
