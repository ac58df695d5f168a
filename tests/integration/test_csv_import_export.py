"""CSV import and export: every kind of case exports to CSV and imports back unchanged, and a
bad row is named by its number, line and column, saving nothing."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import httpx

from agentlasso.domain.checks import ABOUT, CHECK_TYPES
from tests.integration.test_import_export import all_cases, comparable, count_cases, jsonl
from tests.integration.test_tool_imports import import_file
from tests.support.api import create_dataset
from tests.support.assertions import assert_problem

CSV = {"content-type": "text/csv"}


def every_kind_of_case() -> list[dict[str, Any]]:
    """Single-turn and conversation cases, older criteria, every check type, hard text."""
    every_check = [{"type": kind, **ABOUT[kind].example} for kind in CHECK_TYPES]
    return [
        {"input": "Plain question", "checks": every_check, "tags": ["smoke", "billing"]},
        {
            "input": 'Commas, "quotes", and\nnewlines\r\nboth kinds; Grüße ✓ 日本語',
            "expected_output": 'Says, "sorry"\nthen refunds',
            "evaluation_type": "BOOLEAN",
            "min_confidence": 0,
            "description": "line one\nline two, with a comma",
            "checks": [
                {"id": "mine", "type": "llm_judge", "criterion": "Is kind", "severity": "minor"}
            ],
        },
        {"input": {"message": "structured", "locale": "de-DE", "n": [1, 2.5, None]}},
        {"input": '{"looks": "like JSON"}', "checks": []},
        {
            "input": "legacy",
            "evaluation_criteria_json": {
                "guardrails": ["guarantee"],
                "expected_tool_calls": ["a.b"],
            },
        },
        {
            "description": "a conversation",
            "conversation": {
                "turns": [
                    {
                        "user": "I want a refund",
                        "checks": [{"type": "output_contains", "value": "order"}],
                    },
                    {"user": "It is A-17", "checks": []},
                ]
            },
            "checks": [{"type": "tool_not_called", "tool": "orders.cancel"}],
        },
        {
            "input": "refund order 1234",
            "tool_fixtures": {
                "orders.lookup": [
                    {"arguments": {"order": 1234}, "result": {"status": "delivered"}},
                    {"result": "no such order"},
                ]
            },
        },
        {"input": "=SUM(A1:A2) and a leading space", "min_confidence": 100},
        {"input": " padded  ", "description": "  spaces kept  "},
    ]


async def export_csv(client: httpx.AsyncClient, dataset_id: str) -> httpx.Response:
    return await client.get(
        f"/api/v1/datasets/{dataset_id}/test-cases/export", params={"format": "csv"}
    )


async def import_csv(client: httpx.AsyncClient, dataset_id: str, body: bytes) -> httpx.Response:
    return await import_file(client, dataset_id, "csv", body, CSV)


async def test_every_kind_of_case_exports_to_csv_and_imports_back_unchanged(
    client: httpx.AsyncClient,
) -> None:
    source = await create_dataset(client)
    imported = await client.post(
        f"/api/v1/datasets/{source['id']}/test-cases/import",
        content=jsonl(iter(every_kind_of_case())),
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text
    exported = await export_csv(client, source["id"])
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.text, newline="")))
    assert rows[2]["input"] == ""
    assert json.loads(rows[2]["input_json"]) == every_kind_of_case()[2]["input"]
    assert rows[3]["input"] == '{"looks": "like JSON"}'  # text stays text
    assert rows[0]["tags"] == "smoke,billing"
    assert json.loads(rows[6]["tool_fixtures"]) == every_kind_of_case()[6]["tool_fixtures"]

    copy = await create_dataset(client)
    reimported = await import_csv(client, copy["id"], exported.content)
    assert reimported.status_code == 201, reimported.text
    assert reimported.json()["imported"] == len(every_kind_of_case())
    original = [comparable(case) for case in await all_cases(client, source["id"])]
    copied = [comparable(case) for case in await all_cases(client, copy["id"])]
    assert copied == original
    assert (await export_csv(client, copy["id"])).content == exported.content


async def test_a_spreadsheet_csv_with_a_bom_and_few_columns_imports(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    body = (
        "\ufeffinput,expected_output,tags,checks\r\n"
        'Where is my order?,Gives the tracking link,"smoke, orders",'
        '"[{""type"": ""tool_called"", ""tool"": ""orders.lookup""}]"\r\n'
        "Hello,,,\r\n"
    ).encode()
    response = await import_csv(client, dataset["id"], body)
    assert response.status_code == 201, response.text
    assert response.json()["items"][0]["imported"] == ["input", "expected_output", "tags", "checks"]
    first, second = await all_cases(client, dataset["id"])
    assert first["tags"] == ["smoke", "orders"]
    assert first["checks"][0]["tool"] == "orders.lookup"
    assert second["input"] == "Hello" and second["expected_output"] is None


async def test_a_bad_row_is_named_by_row_line_and_column_and_saves_nothing(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    body = (
        b'input,checks,min_confidence\n"two\nlines",[],70\n'
        b'x,"[{""type"": ""tool_called"", ""tool"": 42}]",70\n'
        b"y,[,70\nz,[],high\n"
    )
    problem = assert_problem(await import_csv(client, dataset["id"], body), 422)
    assert [(e["item"], e["line"], e["pointer"]) for e in problem["errors"]] == [
        (2, 4, "/checks/0/tool"),
        (3, 5, "/checks"),
        (4, 6, "/min_confidence"),
    ]
    assert "3 of 4 rows" in problem["detail"] and "row 2" in problem["detail"]
    assert await count_cases(client, dataset["id"]) == 0


async def test_an_unknown_column_is_refused_naming_it(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    problem = assert_problem(await import_csv(client, dataset["id"], b"input,notes\na,b\n"), 422)
    (error,) = problem["errors"]
    assert error == {"line": 1, "pointer": "/notes", "detail": error["detail"]}
    assert "Unknown column 'notes'" in error["detail"]
