"""Request rates keyed by project and by web session, previews and tests a minute, new API keys:
what a browser or an API client sees past each, and what stays open however busy a project is.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import asyncpg
import httpx
import msgspec
import pytest
from redis.asyncio import Redis

from agentlasso.config import Settings
from agentlasso.coordination.rate_limits import TokenBucket, take_together
from agentlasso.domain.audit import Caller, CliActor
from agentlasso.domain.scopes import Scope
from agentlasso.server import create_app
from agentlasso.services.api_keys import create_key
from tests.e2e.test_server_recovery import private_redis
from tests.support.api import create_dataset, register_agent
from tests.support.assertions import assert_problem
from tests.support.databases import ServerUrls, new_project_key
from tests.support.fake_agent import running_fake_agent
from tests.support.processes import free_port
from tests.support.servers import serving
from tests.support.web import (
    browser,
    case_fields,
    csrf_token,
    hidden_field,
    project_of,
    shown_text,
    sign_in,
)

Served = Callable[..., AbstractAsyncContextManager[str]]


@pytest.fixture
def served(settings: Settings) -> Served:
    """An API process (pages and API) with some limits changed; its base URL."""

    @asynccontextmanager
    async def app(**limits: Any) -> AsyncIterator[str]:
        async with serving(create_app(msgspec.structs.replace(settings, **limits))) as url:
            yield url

    return app


async def another_key_of(database_url: str, key: str) -> str:
    """A second active key of the same project."""
    connection = await asyncpg.connect(database_url)
    try:
        project_id = await project_of(connection, key)
        caller = Caller(actor=CliActor(command="test"))
        return (await create_key(connection, project_id, Scope.ADMIN, caller)).key
    finally:
        await connection.close()


@asynccontextmanager
async def api_client(url: str, key: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": key}, timeout=60) as http:
        yield http


def said_retry(text: str) -> int:
    """The seconds a 429's words say to wait."""
    found = re.search(r"try again in (\d+) s", shown_text(text))
    assert found, shown_text(text)[:400]
    return int(found[1])


async def test_every_key_of_a_project_draws_on_one_bucket(
    served: Served, api_key: str, database_url: str
) -> None:
    second_key = await another_key_of(database_url, api_key)
    async with (
        served(rate_limit_per_s=1, rate_limit_burst=5) as url,
        api_client(url, api_key) as first,
        api_client(url, second_key) as second,
        api_client(url, await new_project_key(database_url)) as other_project,
    ):
        answers = [await first.get("/api/v1/datasets") for _ in range(5)]
        minted = await second.get("/api/v1/datasets")
        elsewhere = await other_project.get("/api/v1/datasets")
    assert [answer.status_code for answer in answers] == [200] * 5
    body = assert_problem(minted, 429)
    assert minted.headers["retry-after"] == "1"
    assert "its API keys and web sessions together" in body["detail"]
    assert elsewhere.status_code == 200


async def test_a_projects_pages_share_its_rate_and_what_must_stay_open_does(
    served: Served, api_key: str
) -> None:
    async with (
        served(rate_limit_per_s=0.2, rate_limit_burst=4) as url,
        api_client(url, api_key) as api,
        browser(url) as web,
    ):
        assert (await sign_in(web, api_key)).status_code == 303  # one of the four
        spent = [(await api.get("/api/v1/datasets")).status_code for _ in range(3)]
        refused = await web.get("/datasets")
        open_paths = ("/health", "/ready", "/metrics", "/static/app.css", "/login")
        always = {path: (await web.get(path)).status_code for path in open_paths}
        # The 429 page still carries the session's Sign out form.
        token = hidden_field(refused.text, "csrf_token")
        signed_out = await web.post("/logout", data={"csrf_token": token})
    assert spent == [200, 200, 200]
    assert refused.status_code == 429
    assert refused.headers["content-type"].startswith("text/html")
    assert 1 <= int(refused.headers["retry-after"]) <= 5
    assert said_retry(refused.text) == int(refused.headers["retry-after"])
    assert "Too many requests" in shown_text(refused.text)
    assert always == dict.fromkeys(always, 200)
    assert signed_out.status_code == 303, "signing out is never rate limited"


async def test_signing_in_with_a_key_draws_on_its_projects_rate(
    served: Served, api_key: str, database_url: str
) -> None:
    # Each sign-in writes a session: unmetered, a key could write them as fast as it can send.
    other_key = await new_project_key(database_url)
    async with (
        served(rate_limit_per_s=0.01, rate_limit_burst=3) as url,
        browser(url) as web,
        browser(url) as other_browser,
    ):
        signed_in = [(await sign_in(web, api_key)).status_code for _ in range(3)]
        refused = await sign_in(web, api_key)
        other_project = await sign_in(other_browser, other_key)
    connection = await asyncpg.connect(database_url)
    try:
        project_id = await project_of(connection, api_key)
        sessions = await connection.fetchval(
            "SELECT count(*) FROM web_sessions WHERE project_id = $1", project_id
        )
    finally:
        await connection.close()
    assert signed_in == [303, 303, 303]
    assert refused.status_code == 429
    assert said_retry(refused.text) == int(refused.headers["retry-after"])
    assert "its API keys and web sessions together" in shown_text(refused.text)
    assert 'name="api_key"' in refused.text, "the sign-in form is shown again"
    assert sessions == 1, "each sign-in ended the browser's previous session; the refused none"
    assert other_project.status_code == 303


async def test_a_session_past_its_page_rate_is_told_when_to_try_again(
    served: Served, api_key: str
) -> None:
    async with (
        served(web_rate_limit_per_s=0.2, web_rate_limit_burst=4) as url,
        api_client(url, api_key) as api,
        browser(url) as web,
        browser(url) as second_session,
    ):
        await sign_in(web, api_key)
        token = await csrf_token(web)
        pages = [(await web.get("/datasets")).status_code for _ in range(3)]
        refused = await web.get("/datasets")
        live_check = await web.post(
            "/ui/check-json",
            data={"field": "tools", "tools": "[]"},
            headers={"hx-request": "true", "hx-target": "tools-check", "x-csrf-token": token},
        )
        still_api = await api.get("/api/v1/datasets")
        await sign_in(second_session, api_key)
        other_session = await second_session.get("/datasets")
        signed_out = await web.post("/logout", data={"csrf_token": token})
    assert pages == [200, 200, 200]
    assert refused.status_code == 429 and said_retry(refused.text) >= 1
    assert refused.headers["retry-after"] == str(said_retry(refused.text))
    # htmx gets a notice in the page's place for notices; the field and what was typed stay.
    assert live_check.status_code == 429 and "retry-after" in live_check.headers
    assert live_check.headers["hx-retarget"] == "#notices"
    assert live_check.headers["hx-reswap"] == "innerHTML"
    assert live_check.headers["hx-reselect"] == ".rate-limited"
    assert 'class="rate-limited' in live_check.text and said_retry(live_check.text) >= 1
    assert "<form" not in live_check.text
    assert still_api.status_code == 200 and other_session.status_code == 200
    assert signed_out.status_code == 303


def editor_fields(token: str, **overrides: str) -> dict[str, str]:
    """A new case as the editor posts it, asking for a Preview (each input a new one)."""
    fields = {"input": f"Where is my refund? {secrets.token_hex(4)}", "action": "preview"}
    return {"csrf_token": token, **case_fields(**fields), **overrides}


async def test_previews_and_tests_share_a_quota_a_minute_per_project(
    served: Served, api_key: str, database_url: str
) -> None:
    with running_fake_agent() as agent:
        async with (
            served(quota_preview_calls_per_min=3) as url,
            api_client(url, api_key) as api,
            browser(url) as web,
        ):
            agent_id = await register_agent(api, agent.url)
            dataset = await create_dataset(api)
            await sign_in(web, api_key)
            token = await csrf_token(web)
            editor = f"/datasets/{dataset['id']}/cases/new"
            previews = [await web.post(editor, data=editor_fields(token)) for _ in range(3)]
            refused = await web.post(editor, data=editor_fields(token, input="Typed by hand"))
            test_message = await web.post(
                "/settings/agent/test", data={"csrf_token": token, "message": "Hi"}
            )
            invoked = await api.post(f"/api/v1/agents/{agent_id}/invoke", json={"input": "Hi"})
            other_key = await new_project_key(database_url)
            async with api_client(url, other_key) as other:
                other_agent = await register_agent(other, agent.url)
                elsewhere = await other.post(
                    f"/api/v1/agents/{other_agent}/invoke", json={"input": "Hi"}
                )
    assert [answer.status_code for answer in previews] == [200] * 3
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    shown = shown_text(refused.text)
    assert "may make 3 agent and AI judge calls a minute" in shown
    assert said_retry(refused.text) == int(refused.headers["retry-after"])
    assert "Typed by hand" in refused.text, "the editor keeps what was typed"
    assert test_message.status_code == 429
    assert "may make 3 agent and AI judge calls a minute" in shown_text(test_message.text)
    assert_problem(invoked, 429)
    assert "retry-after" in invoked.headers
    assert elsewhere.status_code == 200, "another project's quota is its own"


async def test_new_keys_are_bounded_in_number_and_in_rate(served: Served, api_key: str) -> None:
    async with served(quota_api_keys=2, quota_keys_created_per_hour=3) as url, browser(url) as web:
        await sign_in(web, api_key)
        token = await csrf_token(web)

        async def create() -> httpx.Response:
            return await web.post(
                "/settings/keys",
                data={"csrf_token": token, "form_id": secrets.token_urlsafe(16), "scope": "ci"},
            )

        second = await create()
        over_cap = await create()
        settings_page = (await web.get("/settings")).text
        revoke_url = re.findall(r'action="(/settings/keys/[^"]+/revoke)"', settings_page)[0]
        await web.post(revoke_url, data={"csrf_token": token})
        after_revoke = await create()
        over_rate = await create()
    assert second.status_code == 200 and "Your new API key" in shown_text(second.text)
    assert over_cap.status_code == 409
    assert "2 active API keys, the most it may hold" in shown_text(over_cap.text)
    assert after_revoke.status_code == 200
    assert over_rate.status_code == 429
    assert "may create 3 API keys an hour" in shown_text(over_rate.text)
    assert said_retry(over_rate.text) == int(over_rate.headers["retry-after"])


async def test_buckets_taken_together_give_all_or_nothing(server_urls: ServerUrls) -> None:
    """A page's session bucket is not spent when its project's is empty (and the reverse)."""
    redis = Redis.from_url(server_urls.redis_url)
    prefix = f"agentlasso:test:{secrets.token_hex(6)}"
    roomy = TokenBucket(redis, f"{prefix}:roomy", per_s=0.001, capacity=5)
    empty = TokenBucket(redis, f"{prefix}:empty", per_s=0.001, capacity=1)
    try:
        assert await empty.take("p") == 0
        refused = await take_together([(roomy, "s"), (empty, "p")])
        # Asking more than a bucket holds waits for a full bucket, not for ever.
        heavy = await take_together([(roomy, "heavy")], tokens=50)
        left = [await roomy.take("s") for _ in range(6)]
    finally:
        await redis.aclose()
    assert 990 <= refused <= 1000
    assert heavy == 0, "a full bucket lets the heaviest action through, emptying it"
    assert left == [0, 0, 0, 0, 0, pytest.approx(1000, abs=10)], "the refusal took none"


async def test_with_redis_away_the_limits_are_not_applied_rather_than_refusing_everyone(
    settings: Settings, api_key: str
) -> None:
    port = free_port()
    tight = msgspec.structs.replace(
        settings, redis_url=f"redis://127.0.0.1:{port}/0", rate_limit_burst=1,
        rate_limit_per_s=0.01, web_rate_limit_burst=1, web_rate_limit_per_s=0.01,
    )  # fmt: skip
    with private_redis(port) as redis_server:
        async with (
            serving(create_app(tight)) as url,
            api_client(url, api_key) as api,
            browser(url) as web,
        ):
            await sign_in(web, api_key)
            redis_server.kill()
            redis_server.wait()
            away = [(await api.get("/api/v1/datasets")).status_code for _ in range(3)]
            away += [(await web.get("/datasets")).status_code for _ in range(3)]
            with private_redis(port):
                back = [(await api.get("/api/v1/datasets")).status_code for _ in range(2)]
    assert away == [200] * 6
    assert back == [200, 429], "the limits apply again once Redis is back"
