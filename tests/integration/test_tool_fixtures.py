"""Tool fixtures on test cases (contract section 14) through the real API: written, read,
changed (a new revision), refused naming the field, exported and imported back."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.api import create_dataset
from tests.support.assertions import assert_problem

FIXTURES = {
    "orders.lookup": [{"arguments": {"order": 1234}, "result": {"status": "paid"}}],
    "stripe.refund": [{"result": {"refund_id": "re_1"}}],
}
CASE = {"input": "refund order 1234", "checks": [{"type": "tool_called", "tool": "stripe.refund"}]}


async def new_case(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    dataset = await create_dataset(client)
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json={**CASE, **fields}
    )
    assert response.status_code == 201, response.text
    case: dict[str, Any] = response.json()
    return case


async def test_fixtures_are_written_read_and_changed_as_a_new_revision(
    client: httpx.AsyncClient,
) -> None:
    case = await new_case(client, tool_fixtures=FIXTURES)
    assert case["tool_fixtures"] == FIXTURES
    assert (await client.get(f"/api/v1/test-cases/{case['id']}")).json()[
        "tool_fixtures"
    ] == FIXTURES

    changed = await client.patch(
        f"/api/v1/test-cases/{case['id']}",
        json={"tool_fixtures": {"orders.lookup": [{"result": 1}]}},
    )

    assert changed.status_code == 200, changed.text
    assert changed.json()["revision"] == case["revision"] + 1
    assert changed.json()["tool_fixtures"] == {"orders.lookup": [{"result": 1}]}
    cleared = await client.patch(f"/api/v1/test-cases/{case['id']}", json={"tool_fixtures": None})
    assert "tool_fixtures" not in cleared.json(), "a case without fixtures leaves them out"


async def test_a_case_without_fixtures_does_not_show_them(client: httpx.AsyncClient) -> None:
    assert "tool_fixtures" not in await new_case(client)


async def test_malformed_fixtures_are_refused_naming_where(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    url = f"/api/v1/datasets/{dataset['id']}/test-cases"
    bad = [
        (
            {"orders.lookup": [{"arguments": [1, 2], "result": 1}]},
            "/tool_fixtures",
        ),
        ({"orders.lookup": [{"arguments": {}}]}, "/tool_fixtures"),
        ({"orders.lookup": [{"result": 1, "extra": 2}]}, "/tool_fixtures"),
        ({"": [{"result": 1}]}, "/tool_fixtures"),
        ({f"tool{n}": [] for n in range(101)}, "/tool_fixtures"),
        ({"orders.lookup": [{"result": n} for n in range(101)]}, "/tool_fixtures"),
    ]
    for fixtures, pointer in bad:
        response = await client.post(url, json={**CASE, "tool_fixtures": fixtures})
        assert_problem(response, 422, pointer=pointer)
    arguments = await client.post(url, json={**CASE, "tool_fixtures": bad[0][0]})
    [error] = arguments.json()["errors"]
    assert error["detail"] == (
        "Expected `object | null`, got `array` (under one of its keys, at `[0].arguments`)"
    )
    assert (await client.get(url)).json()["items"] == [], "nothing was stored"


async def test_fixtures_export_and_import_back_unchanged(client: httpx.AsyncClient) -> None:
    case = await new_case(client, tool_fixtures=FIXTURES)
    exported = await client.get(f"/api/v1/datasets/{case['dataset_id']}/test-cases/export")
    copy = await create_dataset(client)

    imported = await client.post(
        f"/api/v1/datasets/{copy['id']}/test-cases/import", content=exported.content,
        headers={"content-type": "application/x-ndjson"},
    )  # fmt: skip

    assert imported.status_code == 201, imported.text
    [again] = (await client.get(f"/api/v1/datasets/{copy['id']}/test-cases")).json()["items"]
    assert again["tool_fixtures"] == FIXTURES
