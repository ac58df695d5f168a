"""The audit log over HTTP: each change of the API writes one entry, with its actor and the
names of what changed, never a secret; filters, pages, and another project's log unseen."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.api import create_case, create_dataset
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key

HEADER_SECRET = "Bearer sk-agent-header-never-logged-7731"
JUDGE_SECRET = "sk-ant-judge-key-never-logged-9917"


async def audit_entries(client: httpx.AsyncClient, **params: Any) -> list[dict[str, Any]]:
    """The project's audit log as the API lists it (one page of up to 1000)."""
    response = await client.get("/api/v1/audit-log", params={"limit": 1000, **params})
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def newest(client: httpx.AsyncClient, count: int = 1) -> list[dict[str, Any]]:
    """The project's `count` newest entries, newest first."""
    return (await audit_entries(client))[:count]


def key_actor(api_key: str) -> dict[str, Any]:
    """The actor the log names for a request made with this key (its id aside)."""
    return {"kind": "api_key", "prefix": api_key[:11]}


def assert_by_key(entry: dict[str, Any], api_key: str) -> None:
    """The entry's actor is the key, and its address the test's own."""
    assert {k: entry["actor"][k] for k in ("kind", "prefix")} == key_actor(api_key)
    assert entry["ip"] == "127.0.0.1"


async def test_a_new_project_log_starts_with_its_key_made_at_the_command_line(
    client: httpx.AsyncClient, api_key: str
) -> None:
    [entry] = await audit_entries(client)
    assert entry["action"] == "api_key.created"
    assert entry["actor"] == {"kind": "cli", "command": "keys create"}
    assert entry["object"]["type"] == "api_key"
    assert entry["changes"] == {"prefix": api_key[:11], "scope": "admin"}
    assert entry["seq"] == 1 and entry["ip"] is None
    assert entry["prev_hash"] == "00" * 32 and len(entry["hash"]) == 64
    assert api_key not in json.dumps(entry)


async def test_an_agent_created_changed_and_deleted_writes_one_entry_each(
    client: httpx.AsyncClient, api_key: str
) -> None:
    body = {"name": "support bot", "url": "http://127.0.0.1:9/agent"}
    created = await client.post(
        "/api/v1/agents", json={**body, "headers": {"Authorization": HEADER_SECRET}}
    )
    assert created.status_code == 201, created.text
    agent_id = created.json()["id"]
    [entry] = await newest(client)
    assert entry["action"] == "agent.created"
    assert entry["object"] == {"type": "agent", "id": agent_id}
    assert entry["changes"] == {"name": "support bot", "header_names": ["authorization"]}
    assert_by_key(entry, api_key)

    renamed = await client.patch(f"/api/v1/agents/{agent_id}", json={"name": "b", "timeout_s": 5})
    assert renamed.status_code == 200, renamed.text
    [entry] = await newest(client)
    assert entry["action"] == "agent.changed"
    assert entry["changes"] == {"fields": ["name", "timeout_s"]}

    rotated = await client.patch(
        f"/api/v1/agents/{agent_id}",
        json={"headers": {"Authorization": HEADER_SECRET + "x", "X-Team": HEADER_SECRET}},
    )
    assert rotated.status_code == 200, rotated.text
    [entry] = await newest(client)
    assert entry["action"] == "agent.headers_changed"
    assert entry["changes"] == {"fields": ["headers"], "header_names": ["authorization", "x-team"]}

    assert (await client.delete(f"/api/v1/agents/{agent_id}")).status_code == 204
    entries = await audit_entries(client)
    assert entries[0]["action"] == "agent.deleted"
    assert entries[0]["changes"] == {"name": "b"}
    assert [each["action"] for each in entries] == [
        "agent.deleted", "agent.headers_changed", "agent.changed", "agent.created",
        "api_key.created",
    ]  # fmt: skip
    whole = (await client.get("/api/v1/audit-log")).text
    assert HEADER_SECRET not in whole and "sk-agent" not in whole


async def test_a_change_that_changes_nothing_writes_no_entry(client: httpx.AsyncClient) -> None:
    body = {"name": "same", "url": "http://127.0.0.1:9/agent", "headers": {"A": HEADER_SECRET}}
    agent_id = (await client.post("/api/v1/agents", json=body)).json()["id"]
    same = {"name": "same", "headers": {"a": HEADER_SECRET}}
    assert (await client.patch(f"/api/v1/agents/{agent_id}", json=same)).status_code == 200
    assert [each["action"] for each in await newest(client, 2)] == [
        "agent.created", "api_key.created"
    ]  # fmt: skip


async def test_the_judge_key_set_and_removed_is_recorded_but_never_the_key(
    client: httpx.AsyncClient, api_key: str
) -> None:
    answer = await client.patch("/api/v1/judge-settings", json={"anthropic_api_key": JUDGE_SECRET})
    assert answer.status_code == 200, answer.text
    [entry] = await newest(client)
    assert entry["action"] == "judge_key.set"
    assert entry["changes"] == {"replaced": False}
    assert_by_key(entry, api_key)
    answer = await client.patch("/api/v1/judge-settings", json={"anthropic_api_key": None})
    assert answer.status_code == 200, answer.text
    [entry] = await newest(client)
    assert entry["action"] == "judge_key.removed" and entry["changes"] == {}
    log_text = (await client.get("/api/v1/audit-log")).text
    assert JUDGE_SECRET not in log_text and "judge-key-never" not in log_text


async def test_the_judge_model_changed_says_from_what_to_what(client: httpx.AsyncClient) -> None:
    models = (await client.get("/api/v1/judge-settings")).json()
    model = models["effective_model"]
    answer = await client.patch("/api/v1/judge-settings", json={"model": model})
    assert answer.status_code == 200, answer.text
    [entry] = await newest(client)
    assert entry["action"] == "judge_model.changed"
    assert entry["changes"] == {"before": None, "after": model}


async def test_datasets_and_cases_deleted_are_recorded(
    client: httpx.AsyncClient, api_key: str
) -> None:
    dataset = await create_dataset(client, name="refunds")
    case = await create_case(client, dataset["id"])
    await create_case(client, dataset["id"])
    assert (await client.delete(f"/api/v1/test-cases/{case['id']}")).status_code == 204
    [entry] = await newest(client)
    assert entry["action"] == "test_case.deleted"
    assert entry["object"] == {"type": "test_case", "id": case["id"]}
    assert entry["changes"] == {"dataset_id": dataset["id"]}
    assert_by_key(entry, api_key)
    assert (await client.delete(f"/api/v1/datasets/{dataset['id']}")).status_code == 204
    [entry] = await newest(client)
    assert entry["action"] == "dataset.deleted"
    assert entry["object"] == {"type": "dataset", "id": dataset["id"]}
    assert entry["changes"] == {"name": "refunds", "cases": 1}


async def test_trace_retention_changed_says_from_what_to_what(client: httpx.AsyncClient) -> None:
    answer = await client.put("/api/v1/trace-settings", json={"retention_days": 7})
    assert answer.status_code == 200, answer.text
    [entry] = await newest(client)
    assert entry["action"] == "trace_retention.changed"
    assert entry["changes"] == {"before": 30, "after": 7}
    assert (await client.put("/api/v1/trace-settings", json={"retention_days": 7})).is_success
    assert (await newest(client))[0]["seq"] == entry["seq"]


async def test_reading_the_log_writes_nothing_and_nothing_edits_it(
    client: httpx.AsyncClient,
) -> None:
    await audit_entries(client)
    [entry] = await audit_entries(client)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        answer = await client.request(method, "/api/v1/audit-log", json={})
        assert answer.status_code == 405, (method, answer.text)
        assert (await client.request(method, "/api/v1/audit-log/1")).status_code == 404
    assert await audit_entries(client) == [entry]


async def test_filters_by_action_and_actor_and_pages_newest_first(
    client: httpx.AsyncClient, api_key: str
) -> None:
    for number in range(5):
        await create_dataset(client, name=f"d{number}")
    datasets = (await client.get("/api/v1/datasets")).json()["items"]
    for dataset in datasets:
        assert (await client.delete(f"/api/v1/datasets/{dataset['id']}")).status_code == 204
    deleted = await audit_entries(client, action="dataset.deleted")
    assert [each["changes"]["name"] for each in deleted] == ["d4", "d3", "d2", "d1", "d0"]
    by_key = await audit_entries(client, actor=api_key[:11])
    assert len(by_key) == 5 and {each["action"] for each in by_key} == {"dataset.deleted"}
    assert [each["action"] for each in await audit_entries(client, actor="cli")] == [
        "api_key.created"
    ]
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        params: dict[str, str | int] = {"limit": 2, "action": "dataset.deleted"}
        if cursor:
            params["cursor"] = cursor
        answer = (await client.get("/api/v1/audit-log", params=params)).json()
        pages.append([each["changes"]["name"] for each in answer["items"]])
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert pages == [["d4", "d3"], ["d2", "d1"], ["d0"]]


async def test_an_unknown_action_or_a_bad_actor_is_refused_naming_it(
    client: httpx.AsyncClient,
) -> None:
    answer = await client.get("/api/v1/audit-log", params={"action": "dataset.renamed"})
    assert_problem(answer, 422, parameter="action")
    answer = await client.get("/api/v1/audit-log", params={"actor": "has space"})
    assert_problem(answer, 422, parameter="actor")


async def test_another_projects_log_is_never_seen(
    client: httpx.AsyncClient, base_url: str, database_url: str
) -> None:
    other_key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other_key}) as other:
        await create_dataset(other, name="theirs")
        theirs = (await other.get("/api/v1/datasets")).json()["items"][0]
        assert (await other.delete(f"/api/v1/datasets/{theirs['id']}")).status_code == 204
        assert len(await audit_entries(other)) == 2
    mine = await audit_entries(client)
    assert [each["action"] for each in mine] == ["api_key.created"]
    assert await audit_entries(client, actor=other_key[:11]) == []
    assert "theirs" not in (await client.get("/api/v1/audit-log")).text


async def test_the_log_needs_a_key(anonymous: httpx.AsyncClient) -> None:
    assert (await anonymous.get("/api/v1/audit-log")).status_code == 401
