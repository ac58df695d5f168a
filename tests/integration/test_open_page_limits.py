"""The pages open to everyone (the sign-in forms, single sign-on's start and callback, setting a
password) draw on their address's request rate: past it, a 429 page saying when to try again,
and nothing is written; a signed-in page does not draw on it."""

from __future__ import annotations

import uuid

import asyncpg
import msgspec
import pytest

from agentlasso.config import Settings
from agentlasso.server import create_app
from agentlasso.services.api_keys import create_key_for_project_name
from tests.support.servers import serving
from tests.support.web import browser, shown_text, sign_in

OPEN_PAGES = [
    ("GET", "/login"),
    ("POST", "/login/password"),
    ("POST", "/login"),
    ("GET", "/login/sso"),
    ("GET", "/login/sso/callback?state=junk"),
    ("GET", "/set-password?token=junk"),
    ("POST", "/set-password"),
]


@pytest.mark.parametrize(("method", "path"), OPEN_PAGES, ids=lambda value: str(value))
async def test_an_address_past_its_open_page_rate_gets_a_429_page(
    settings: Settings, database_url: str, method: str, path: str
) -> None:
    limited = msgspec.structs.replace(
        settings, open_page_rate_limit_per_s=0.01, open_page_rate_limit_burst=3,
        queue_name=f"{settings.queue_name}:{method}{path}",
    )  # fmt: skip
    connection = await asyncpg.connect(database_url)
    try:
        attempts = "SELECT count(*) FROM sso_attempts"
        async with serving(create_app(limited)) as url, browser(url) as web:
            for _ in range(3):
                assert (await web.request(method, path)).status_code != 429
            before = await connection.fetchval(attempts)
            refused = await web.request(method, path)
            assert refused.status_code == 429, refused.text
            assert int(refused.headers["retry-after"]) >= 1
            said = shown_text(refused.text)
            assert "Too many sign-in requests from your address" in said and "try again in" in said
            assert await connection.fetchval(attempts) == before
    finally:
        await connection.close()


async def test_signed_in_pages_do_not_draw_on_the_open_pages_rate(
    settings: Settings, database_url: str
) -> None:
    limited = msgspec.structs.replace(
        settings, open_page_rate_limit_per_s=0.01, open_page_rate_limit_burst=3,
        queue_name=f"{settings.queue_name}:signed-in",
    )  # fmt: skip
    key = await create_key_for_project_name(database_url, f"open-pages-{uuid.uuid4().hex[:8]}")
    async with serving(create_app(limited)) as url, browser(url) as web:
        assert (await sign_in(web, key.key)).status_code == 303
        for _ in range(10):
            assert (await web.get("/datasets")).status_code == 200
