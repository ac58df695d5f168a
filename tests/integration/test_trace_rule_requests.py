"""POST /api/v1/trace-rules: what a rule must hold, each refusal naming its field."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.assertions import assert_problem

CHECKS = [{"type": "tool_called", "tool": "orders.track"}]


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"name": "r", "checks": CHECKS, "sample_rate": 1.5}, "/sample_rate"),
        ({"name": "r", "checks": CHECKS, "backfill_hours": 169}, "/backfill_hours"),
        ({"name": "r", "checks": CHECKS, "daily_judge_budget_usd": -1}, "/daily_judge_budget_usd"),
        ({"name": "r", "checks": CHECKS, "filter": {"service": "x"}}, "/filter"),
        ({"name": "", "checks": CHECKS}, "/name"),
        ({"name": "r"}, "/checks"),
        (
            {
                "name": "r",
                "checks": [
                    {"type": "tool_called", "tool": "a", "id": "x"},
                    {"type": "tool_called", "tool": "b", "id": "x"},
                ],
            },
            "/checks/1/id",
        ),
        (
            {"name": "r", "checks": [{"type": "output_matches_schema", "schema": {"type": 7}}]},
            "/checks/0/schema",
        ),
    ],
)
async def test_a_rule_that_cannot_be_used_is_refused_naming_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], pointer: str
) -> None:
    answer = await client.post("/api/v1/trace-rules", json=body)
    assert_problem(answer, 422)
    pointers = [error.get("pointer", "") for error in answer.json()["errors"]]
    assert any(found.startswith(pointer) for found in pointers), pointers
    assert (await client.get("/api/v1/trace-rules")).json() == {"trace_rules": []}


async def test_a_rule_is_answered_with_its_check_ids_and_listed(client: httpx.AsyncClient) -> None:
    answer = await client.post(
        "/api/v1/trace-rules",
        json={"name": "Tracks", "checks": CHECKS, "expected_output": "Names a delivery day",
              "filter": {"attributes": {"service.name": "bot"}}, "sample_rate": 0.25},
    )  # fmt: skip
    assert answer.status_code == 201, answer.text
    rule = answer.json()
    assert rule["checks"][0]["id"]
    assert rule["filter"] == {"attributes": {"service.name": "bot"}}
    assert (rule["sample_rate"], rule["backfill_hours"], rule["expected_output"]) == (
        0.25, 0, "Names a delivery day",
    )  # fmt: skip
    listed = (await client.get("/api/v1/trace-rules")).json()["trace_rules"]
    assert [found["id"] for found in listed] == [rule["id"]]
    read = (await client.get(f"/api/v1/trace-rules/{rule['id']}")).json()
    assert read["stats"]["evaluated"] == 0 and read["recent_failures"] == []
    assert (await client.delete(f"/api/v1/trace-rules/{rule['id']}")).status_code == 204
    assert (await client.get(f"/api/v1/trace-rules/{rule['id']}")).status_code == 404
