"""JSON Lines import (all-or-nothing, numbered errors) and export that imports back unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest

from tests.support.api import create_dataset
from tests.support.assertions import assert_problem

JSONL = {"content-type": "application/x-ndjson"}


def sample_case(number: int) -> dict[str, Any]:
    """A realistic case with six checks; its shape varies with the number."""
    return {
        "input": f"Order #{number} arrived broken, I want my money back",
        "description": f"refund path {number}",
        "checks": [
            {"type": "tool_called", "tool": "orders.lookup"},
            {
                "type": "tool_order",
                "tools": ["orders.lookup", "stripe.refund"],
                "severity": "minor",
            },
            {"type": "tool_not_called", "tool": "orders.cancel"},
            {"type": "output_contains", "value": "3-5 business days"},
            {"type": "output_not_contains", "value": r"\b(?:\d[ -]?){13,16}\b", "regex": True},
            {"type": "output_valid_json", "severity": "minor"},
        ],
        "expectedOutput": "Apologises and confirms the refund amount" if number % 2 else None,
        "evaluationType": "BOOLEAN" if number % 3 == 0 else "SCORE",
        "minConfidence": number % 101,
    }


def jsonl(cases: Iterator[dict[str, Any]]) -> bytes:
    return b"".join(msgspec.json.encode(case) + b"\n" for case in cases)


async def import_body(client: httpx.AsyncClient, dataset_id: str, body: bytes) -> httpx.Response:
    return await client.post(
        f"/api/v1/datasets/{dataset_id}/test-cases/import", content=body, headers=JSONL
    )


async def count_cases(client: httpx.AsyncClient, dataset_id: str) -> int:
    response = await client.get(f"/api/v1/datasets/{dataset_id}/test-cases/export")
    return response.content.count(b"\n")


async def all_cases(client: httpx.AsyncClient, dataset_id: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        page = (await client.get(f"/api/v1/datasets/{dataset_id}/test-cases", params=params)).json()
        cases += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return cases


def comparable(case: dict[str, Any]) -> dict[str, Any]:
    """A case without what differs between two copies of it (ids, dataset, timestamps)."""
    ignored = {"id", "dataset_id", "created_at", "updated_at"}
    return {key: value for key, value in case.items() if key not in ignored}


@pytest.mark.slow
async def test_100000_lines_import(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    body = jsonl(sample_case(n) for n in range(100_000))
    response = await import_body(client, dataset["id"], body)
    assert response.status_code == 201, response.text
    assert response.json() == {"imported": 100_000}
    assert await count_cases(client, dataset["id"]) == 100_000


@pytest.mark.slow
async def test_a_bad_line_at_77001_rejects_the_whole_file(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    lines = [sample_case(n) for n in range(100_000)]
    lines[77_000]["checks"][2] = {"type": "tool_not_called", "tool": 42}
    response = await import_body(client, dataset["id"], jsonl(iter(lines)))
    problem = assert_problem(response, 422)
    assert problem["errors"] == [
        {"line": 77_001, "pointer": "/checks/2/tool", "detail": "Expected `str`, got `int`"}
    ]
    assert "77001" in problem["detail"] and "Nothing was imported" in problem["detail"]
    assert await count_cases(client, dataset["id"]) == 0


async def test_import_reports_every_kind_of_bad_line_with_its_number(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    body = b"\n".join(
        [
            b'{"input": "fine"}',
            b"",
            b"{not json",
            b'{"input": "x", "checks": [{"type": "psychic"}]}',
            b'{"input": "x", "expected_output": "a", "expectedOutput": "b"}',
            b'{"input": "x", "checks": [{"id": "a", "type": "output_valid_json"},'
            b' {"id": "a", "type": "output_valid_json"}]}',
            b'{"checks": []}',
        ]
    )
    problem = assert_problem(await import_body(client, dataset["id"], body), 422)
    by_line = {error["line"]: error for error in problem["errors"]}
    assert sorted(by_line) == [3, 4, 5, 6, 7]
    assert "Not valid JSON" in by_line[3]["detail"]
    assert by_line[4]["pointer"] == "/checks/0/type"
    assert by_line[5]["pointer"] == "/expected_output"
    assert by_line[6]["pointer"] == "/checks/1/id"
    assert by_line[7]["pointer"] == "/input"
    assert await count_cases(client, dataset["id"]) == 0


async def test_an_empty_import_is_refused(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    assert_problem(await import_body(client, dataset["id"], b"\n  \n"), 400)


async def test_camel_case_spellings_are_accepted(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    body = jsonl(
        iter(
            [
                {
                    "input": "a",
                    "expectedOutput": "x",
                    "evaluationType": "BOOLEAN",
                    "minConfidence": 0,
                },
                {
                    "input": "b",
                    "expected_output": "y",
                    "evaluation_type": "SCORE",
                    "min_confidence": 90,
                },
            ]
        )
    )
    assert (await import_body(client, dataset["id"], body)).status_code == 201
    cases = await all_cases(client, dataset["id"])
    picked = [(c["expected_output"], c["evaluation_type"], c["min_confidence"]) for c in cases]
    assert picked == [("x", "BOOLEAN", 0), ("y", "SCORE", 90)]


async def test_export_then_import_gives_identical_cases(client: httpx.AsyncClient) -> None:
    source = await create_dataset(client)
    cases = [sample_case(n) for n in range(1_200)]
    cases[5] = {"input": {"message": "structured", "locale": "de-DE"}, "checks": []}
    cases[6] = {"input": "legacy", "evaluation_criteria_json": {"guardrails": ["guarantee"]}}
    cases[7] = {
        "input": "Grüße, straße — ✓",
        "checks": [
            {
                "id": "mine",
                "type": "llm_judge",
                "criterion": "States the refund amount",
                "severity": "minor",
            }
        ],
    }
    assert (await import_body(client, source["id"], jsonl(iter(cases)))).status_code == 201

    exported = await client.get(f"/api/v1/datasets/{source['id']}/test-cases/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    copy = await create_dataset(client)
    reimported = await import_body(client, copy["id"], exported.content)
    assert reimported.json() == {"imported": 1_200}

    original = [comparable(case) for case in await all_cases(client, source["id"])]
    copied = [comparable(case) for case in await all_cases(client, copy["id"])]
    assert copied == original
    again = await client.get(f"/api/v1/datasets/{copy['id']}/test-cases/export")
    assert again.content == exported.content


@pytest.mark.parametrize("depth", [70, 1_000, 100_000])
async def test_a_line_nested_too_deeply_is_named_by_its_number_and_field(
    client: httpx.AsyncClient, depth: int
) -> None:
    dataset = await create_dataset(client)
    deep = "[" * depth + "]" * depth
    body = (
        b'{"input": "fine"}\n'
        + f'{{"input": "x", "evaluation_criteria_json": {{"m": {deep}}}}}'.encode()
    )
    problem = assert_problem(await import_body(client, dataset["id"], body), 422)
    (error,) = problem["errors"]
    assert error["line"] == 2
    assert error["pointer"].startswith("/evaluation_criteria_json/m/0/0"), error
    assert "Nested more than 64 levels" in error["detail"]
    assert await count_cases(client, dataset["id"]) == 0
