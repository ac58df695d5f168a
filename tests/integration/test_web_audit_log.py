"""The audit log of what people do in the web app: sign-ins (and failed ones), Settings' forms,
deletions; and Settings -> Audit log, its filters in the URL, its pages, and only its project."""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest_asyncio

from agentlasso.db.pool import connect
from agentlasso.domain.scopes import Scope
from agentlasso.services.api_keys import revoke_key_by_prefix
from agentlasso.services.web_sessions import create_login_link_token
from tests.integration.test_audit_log import audit_entries, newest
from tests.support.api import create_case, create_dataset
from tests.support.databases import key_of_scope, new_project_key
from tests.support.web import browser, hidden_field, project_of, shown_text, sign_in

HEADER_SECRET = "Bearer sk-form-header-never-logged-5150"
JUDGE_SECRET = "sk-ant-form-judge-never-logged-6262"


@dataclass
class Person:
    """A signed-in browser and the CSRF token its session's forms carry."""

    web: httpx.AsyncClient
    csrf: str

    async def post(self, action: str, /, **fields: Any) -> httpx.Response:
        """Submit a form as the page would (with the session's CSRF token)."""
        return await self.web.post(action, data={"csrf_token": self.csrf, **fields})


@pytest_asyncio.fixture
async def person(base_url: str, api_key: str) -> AsyncIterator[Person]:
    """A browser signed in with the `api_key` project's key."""
    async with browser(base_url) as web:
        assert (await sign_in(web, api_key)).status_code == 303
        listing = await web.get("/datasets")
        yield Person(web, hidden_field(listing.text, "csrf_token"))


def by_session_key(entry: dict[str, Any], api_key: str) -> bool:
    """Whether the entry was made by the session signed in with this key, from loopback."""
    actor = entry["actor"]
    made_by = (actor["kind"], actor.get("prefix"), entry["ip"])
    return bool(made_by == ("api_key", api_key[:11], "127.0.0.1"))


async def test_a_sign_in_with_a_key_is_recorded_as_that_key(
    person: Person, client: httpx.AsyncClient, api_key: str
) -> None:
    [entry] = await newest(client)
    assert entry["action"] == "sign_in.succeeded"
    assert entry["changes"] == {"method": "api_key"}
    assert by_session_key(entry, api_key)


async def test_a_sign_in_with_the_dev_link_is_recorded_as_the_link(
    base_url: str, database_url: str, client: httpx.AsyncClient, api_key: str
) -> None:
    database = await connect(database_url)
    try:
        token = await create_login_link_token(database, await project_of(database, api_key))
    finally:
        await database.close()
    async with browser(base_url) as web:
        link_page = await web.get("/login", params={"token": token})
        fields = {name: hidden_field(link_page.text, name) for name in ("login_token", "token")}
        assert (await web.post("/login/link", data=fields)).status_code == 303
    [entry] = await newest(client)
    assert entry["action"] == "sign_in.succeeded"
    assert entry["actor"] == {"kind": "sign_in_link"}
    assert entry["changes"] == {"method": "sign_in_link"}


async def test_a_failed_sign_in_naming_a_key_goes_to_that_keys_project(
    base_url: str, database_url: str, client: httpx.AsyncClient, api_key: str
) -> None:
    async with browser(base_url) as web:
        wrong = api_key[:11] + "x" * (len(api_key) - 11)
        assert (await sign_in(web, wrong)).status_code == 422
    [entry] = await newest(client)
    assert entry["action"] == "sign_in.failed"
    assert entry["changes"] == {"reason": "wrong_key"}
    assert entry["actor"]["prefix"] == api_key[:11] and entry["ip"] == "127.0.0.1"
    assert wrong not in (await client.get("/api/v1/audit-log")).text

    second = await new_project_key(database_url)
    await revoke_key_by_prefix(database_url, second[:11])
    async with (
        browser(base_url) as web,
        httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as same_project,
    ):
        assert (await sign_in(web, second)).status_code == 422
        assert [each["action"] for each in await newest(same_project)] == ["sign_in.failed"]
    database = await asyncpg.connect(database_url)
    try:
        project_id = await database.fetchval(
            "SELECT project_id FROM api_keys WHERE prefix = $1", second[:11]
        )
        reasons = await database.fetch(
            "SELECT action, changes->>'reason' AS reason FROM audit_log WHERE project_id = $1 "
            "ORDER BY seq DESC LIMIT 1",
            project_id,
        )
    finally:
        await database.close()
    assert [(row["action"], row["reason"]) for row in reasons] == [
        ("sign_in.failed", "revoked_key")
    ]


async def test_a_failed_sign_in_naming_no_key_is_written_nowhere(
    base_url: str, database_url: str
) -> None:
    database = await asyncpg.connect(database_url)
    try:
        before = await database.fetchval("SELECT count(*) FROM audit_log")
        async with browser(base_url) as web:
            for text in ("al_nosuchkey0000000000", "not a key at all", "al_"):
                assert (await sign_in(web, text)).status_code == 422
        assert await database.fetchval("SELECT count(*) FROM audit_log") == before
    finally:
        await database.close()


async def test_keys_created_and_revoked_in_settings_are_recorded(
    person: Person, client: httpx.AsyncClient, api_key: str
) -> None:
    created = await person.post("/settings/keys", form_id=secrets.token_urlsafe(16), scope="ci")
    assert created.status_code == 200
    new_key = re.search(r'id="new_key"[^>]*value="([^"]+)"', created.text)
    assert new_key
    [entry] = await newest(client)
    assert entry["action"] == "api_key.created"
    assert entry["changes"] == {"prefix": new_key.group(1)[:11], "scope": "ci"}
    assert by_session_key(entry, api_key)
    key_id = entry["object"]["id"]
    assert (await person.post(f"/settings/keys/{key_id}/revoke")).status_code == 303
    [entry] = await newest(client)
    assert entry["action"] == "api_key.revoked"
    assert entry["object"] == {"type": "api_key", "id": key_id}
    assert new_key.group(1) not in (await client.get("/api/v1/audit-log")).text


async def test_settings_forms_record_the_agent_the_judge_key_and_retention_never_a_secret(
    person: Person, client: httpx.AsyncClient, api_key: str
) -> None:
    saved = await person.post(
        "/settings/agent", name="bot", url="http://127.0.0.1:9/agent", timeout_s="30",
        headers=f"Authorization: {HEADER_SECRET}", form_id=secrets.token_urlsafe(16),
    )  # fmt: skip
    assert saved.status_code == 303, saved.text
    saved = await person.post(
        "/settings/agent", name="bot", url="http://127.0.0.1:9/agent", timeout_s="45"
    )
    assert saved.status_code == 303, saved.text
    judged = await person.post("/settings/judge", anthropic_api_key=JUDGE_SECRET, model="")
    assert judged.status_code == 303, judged.text
    kept = await person.post("/settings/traces", retention_days="14")
    assert kept.status_code == 303, kept.text
    entries = await newest(client, 4)
    assert [each["action"] for each in entries] == [
        "trace_retention.changed", "judge_key.set", "agent.changed", "agent.created",
    ]  # fmt: skip
    assert entries[2]["changes"] == {"fields": ["timeout_s"]}
    assert entries[3]["changes"] == {"name": "bot", "header_names": ["authorization"]}
    assert all(by_session_key(each, api_key) for each in entries)
    log_page = (await person.web.get("/settings/audit-log")).text
    for shown in (log_page, (await client.get("/api/v1/audit-log")).text):
        assert HEADER_SECRET not in shown and JUDGE_SECRET not in shown
        assert "never-logged" not in shown


async def test_deleting_a_dataset_and_a_case_on_their_pages_is_recorded(
    person: Person, client: httpx.AsyncClient, api_key: str
) -> None:
    dataset = await create_dataset(client, name="to go")
    case = await create_case(client, dataset["id"])
    assert (await person.post(f"/cases/{case['id']}/delete")).status_code == 303
    assert (await person.post(f"/datasets/{dataset['id']}/delete")).status_code == 303
    entries = await newest(client, 2)
    assert [each["action"] for each in entries] == ["dataset.deleted", "test_case.deleted"]
    assert entries[0]["changes"] == {"name": "to go", "cases": 0}
    assert all(by_session_key(each, api_key) for each in entries)


def listed_actions(page: str) -> list[str]:
    """The actions of the rows of the audit log page, top to bottom."""
    return re.findall(r'<tr data-action="([^"]+)"', page)


async def test_the_audit_log_page_filters_by_action_and_actor_in_the_url_and_pages(
    person: Person, client: httpx.AsyncClient, api_key: str
) -> None:
    for number in range(53):
        await create_dataset(client, name=f"d{number}")
    for dataset in (await client.get("/api/v1/datasets", params={"limit": 100})).json()["items"]:
        assert (await client.delete(f"/api/v1/datasets/{dataset['id']}")).status_code == 204
    whole = await person.web.get("/settings/audit-log")
    assert whole.status_code == 200
    assert listed_actions(whole.text) == ["dataset.deleted"] * 50
    older = re.search(r'href="(/settings/audit-log\?[^"]*cursor=\d+)"', whole.text)
    assert older and "Older entries" in whole.text
    rest = await person.web.get(older.group(1).replace("&amp;", "&"))
    assert listed_actions(rest.text) == ["dataset.deleted"] * 3 + [
        "sign_in.succeeded", "api_key.created"
    ]  # fmt: skip
    assert "Older entries" not in rest.text

    signed = await person.web.get("/settings/audit-log", params={"action": "sign_in.succeeded"})
    assert listed_actions(signed.text) == ["sign_in.succeeded"]
    assert "Signed in" in shown_text(signed.text) and "127.0.0.1" in signed.text
    assert 'value="sign_in.succeeded" selected' in signed.text
    by_cli = await person.web.get("/settings/audit-log", params={"actor": "cli"})
    assert listed_actions(by_cli.text) == ["api_key.created"]
    assert "Command line (keys create)" in shown_text(by_cli.text)
    none = await person.web.get(
        "/settings/audit-log", params={"actor": api_key[:11], "action": "judge_key.set"}
    )
    assert listed_actions(none.text) == [] and "No entries match." in shown_text(none.text)
    odd = await person.web.get("/settings/audit-log", params={"actor": "a b", "cursor": "x"})
    assert odd.status_code == 200 and "No entries match." in shown_text(odd.text)


async def test_the_audit_log_page_shows_only_its_own_project(
    person: Person, base_url: str, database_url: str
) -> None:
    other_key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other_key}) as other:
        dataset = await create_dataset(other, name="someone else's")
        assert (await other.delete(f"/api/v1/datasets/{dataset['id']}")).status_code == 204
    page = await person.web.get("/settings/audit-log")
    assert listed_actions(page.text) == ["sign_in.succeeded", "api_key.created"]
    assert "someone else" not in page.text and other_key[:11] not in page.text
    theirs = await person.web.get("/settings/audit-log", params={"actor": other_key[:11]})
    assert listed_actions(theirs.text) == []


async def test_the_audit_log_page_needs_a_session(base_url: str) -> None:
    async with browser(base_url) as web:
        answer = await web.get("/settings/audit-log")
        assert answer.status_code in (302, 303)
        assert "/login" in answer.headers["location"]


async def test_reading_the_log_is_not_itself_recorded(
    person: Person, client: httpx.AsyncClient
) -> None:
    before = await audit_entries(client)
    await person.web.get("/settings/audit-log")
    assert await audit_entries(client) == before


async def test_only_an_admin_key_reads_the_log_and_sees_its_link(
    base_url: str, database_url: str, client: httpx.AsyncClient, api_key: str
) -> None:
    read_key = await key_of_scope(database_url, api_key, Scope.READ)
    refused = await client.get("/api/v1/audit-log", headers={"x-api-key": read_key})
    assert refused.status_code == 403
    assert refused.json()["detail"] == (
        'This key\'s scope is "read"; reading the audit log needs "admin".'
    )
    async with browser(base_url) as web:
        assert (await sign_in(web, read_key)).status_code == 303
        settings = await web.get("/settings")
        assert settings.status_code == 200
        assert 'href="/settings/audit-log"' not in settings.text
        page = await web.get("/settings/audit-log")
        assert page.status_code == 403
        assert "reading the audit log" in shown_text(page.text)
    async with browser(base_url) as web:
        assert (await sign_in(web, api_key)).status_code == 303
        assert 'href="/settings/audit-log"' in (await web.get("/settings")).text
