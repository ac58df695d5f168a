"""Tags on a test case (contract 17): written, bounded, returned, exported and imported back."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.api import create_case, create_dataset
from tests.support.assertions import assert_problem

JSONL = {"content-type": "application/x-ndjson"}


async def test_a_case_keeps_its_tags_in_order_each_once(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    case = await create_case(client, dataset["id"], tags=["smoke", "billing", "smoke", "Smoke"])
    # A repeat is folded into its first; tags are compared exactly, so "Smoke" is another.
    assert case["tags"] == ["smoke", "billing", "Smoke"]

    read = (await client.get(f"/api/v1/test-cases/{case['id']}")).json()
    assert read["tags"] == ["smoke", "billing", "Smoke"]

    untagged = await create_case(client, dataset["id"])
    assert untagged["tags"] == []


async def test_editing_tags_makes_a_revision_and_other_edits_keep_them(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    case = await create_case(client, dataset["id"], tags=["smoke"])

    retagged = await client.patch(f"/api/v1/test-cases/{case['id']}", json={"tags": ["nightly"]})
    assert retagged.status_code == 200, retagged.text
    assert retagged.json()["tags"] == ["nightly"]
    assert retagged.json()["revision"] == 2

    described = await client.patch(
        f"/api/v1/test-cases/{case['id']}", json={"description": "why it exists"}
    )
    assert described.json()["tags"] == ["nightly"]

    cleared = await client.patch(f"/api/v1/test-cases/{case['id']}", json={"tags": []})
    assert cleared.json()["tags"] == []


@pytest.mark.parametrize(
    ("tags", "pointer"),
    [
        (["ok", "fine", "also-ok", "has space"], "/tags/3"),
        (["a,b"], "/tags/0"),
        ([""], "/tags/0"),
        (["x" * 65], "/tags/0"),
        ([f"t{number}" for number in range(21)], "/tags"),
        (["ok", 7], "/tags/1"),
        ("smoke", "/tags"),
    ],
)
async def test_a_bad_tag_is_refused_naming_it(
    client: httpx.AsyncClient, tags: Any, pointer: str
) -> None:
    dataset = await create_dataset(client)
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "hi", "tags": tags}
    )
    body = assert_problem(response, 422, pointer=pointer)
    if pointer.startswith("/tags/") and not isinstance(tags[-1], int):
        assert "no whitespace or comma" in str(body["errors"])


async def test_a_bad_tag_on_an_update_is_refused(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    case = await create_case(client, dataset["id"])
    response = await client.patch(f"/api/v1/test-cases/{case['id']}", json={"tags": ["a b"]})
    assert_problem(response, 422, pointer="/tags/0")


async def test_tags_export_and_import_back_unchanged(client: httpx.AsyncClient) -> None:
    source = await create_dataset(client)
    await create_case(client, source["id"], tags=["smoke", "refunds"])
    await create_case(client, source["id"])
    exported = (await client.get(f"/api/v1/datasets/{source['id']}/test-cases/export")).content
    lines = exported.splitlines()
    assert b'"tags":["smoke","refunds"]' in lines[0]
    assert b'"tags"' not in lines[1], "a case without tags exports as it did before tags"

    target = await create_dataset(client, name="copy")
    imported = await client.post(
        f"/api/v1/datasets/{target['id']}/test-cases/import", content=exported, headers=JSONL
    )
    assert imported.status_code == 201, imported.text
    again = (await client.get(f"/api/v1/datasets/{target['id']}/test-cases/export")).content
    assert again == exported


async def test_an_import_line_with_a_bad_tag_names_its_line_and_tag(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    body = b'{"input": "a", "tags": ["smoke"]}\n{"input": "b", "tags": ["ok", "no way"]}\n'
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import", content=body, headers=JSONL
    )
    problem = assert_problem(response, 422, pointer="/tags/1")
    assert problem["errors"][0]["line"] == 2
