"""Previews for the rubric editor: the grade a reply would get, with nothing stored."""

from __future__ import annotations

import asyncio

import httpx

from tests.support.api import create_dataset
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key

CHECKS = [
    {"type": "tool_called", "tool": "stripe.refund"},
    {"type": "output_not_contains", "value": "guarantee", "severity": "minor"},
    {"type": "llm_judge", "criterion": "States the refund amount", "severity": "minor"},
]


async def stored_case(client: httpx.AsyncClient) -> str:
    dataset = await create_dataset(client)
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "refund", "checks": CHECKS}
    )
    return str(response.json()["id"])


async def test_a_stored_case_previews_a_reply_and_stores_nothing(
    client: httpx.AsyncClient,
) -> None:
    case_id = await stored_case(client)
    body = {
        "actual_output": "Refunded, I guarantee it.",
        "actual_tool_calls": [{"name": "stripe.refund"}],
    }
    response = await client.post(f"/api/v1/test-cases/{case_id}/preview", json=body)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["pass_fail"] is True and result["partially_graded"] is True
    statuses = [check["status"] for check in result["check_results"]]
    assert statuses == ["passed", "failed", "not_graded"]
    assert result["judge_reasoning"].startswith("1/2 checks passed; failed (minor): c2")
    runs = (await client.get("/api/v1/eval-runs")).json()["items"]
    assert runs == [], "a preview creates no run"


async def test_a_preview_without_the_reply_says_so(client: httpx.AsyncClient) -> None:
    case_id = await stored_case(client)
    response = await client.post(
        f"/api/v1/test-cases/{case_id}/preview", json={"actual_tool_calls": []}
    )
    result = response.json()["result"]
    assert result["pass_fail"] is False
    assert "not reported" in result["check_results"][1]["detail"]


async def test_unsaved_checks_preview_with_warnings(client: httpx.AsyncClient) -> None:
    body = {
        "checks": [{"type": "output_valid_json"},
                   {"type": "output_contains", "value": "(", "regex": True, "severity": "minor"}],
        "actual_output": '  {"ok": true}\n',
    }  # fmt: skip
    response = await client.post("/api/v1/grading/preview", json=body)
    assert response.status_code == 200, response.text
    preview = response.json()
    assert [c["id"] for c in preview["result"]["check_results"]] == ["c1", "c2"]
    assert preview["result"]["check_results"][0]["passed"] is True
    assert "missing )" in preview["result"]["check_results"][1]["detail"]
    assert preview["warnings"][0]["pointer"] == "/checks/1/value"


async def test_unsaved_older_criteria_preview(client: httpx.AsyncClient) -> None:
    body = {
        "evaluation_criteria_json": {"guardrails": ["guarantee"],
                                     "semantic_guardrails": ["states the amount"]},
        "actual_output": "no promises here",
    }  # fmt: skip
    result = (await client.post("/api/v1/grading/preview", json=body)).json()["result"]
    assert result["pass_fail"] is True
    assert result["ungraded_items"][0]["text"] == "states the amount"
    assert "1 free-text rubric item" in result["judge_reasoning"]


async def test_preview_bad_input(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient, database_url: str
) -> None:
    assert_problem(await client.post("/api/v1/grading/preview", json={"checks": [{"type": "x"}]}),
                   422, pointer="/checks/0/type")  # fmt: skip
    twice = {"checks": [{"id": "a", "type": "output_valid_json"},
                        {"id": "a", "type": "output_valid_json"}]}  # fmt: skip
    assert_problem(await client.post("/api/v1/grading/preview", json=twice), 422,
                   pointer="/checks/1/id")  # fmt: skip
    assert_problem(await client.post("/api/v1/grading/preview", content=b"{"), 400)
    case_id = await stored_case(client)
    other = {"x-api-key": await new_project_key(database_url)}
    response = await anonymous.post(f"/api/v1/test-cases/{case_id}/preview", json={},
                                    headers=other)  # fmt: skip
    assert_problem(response, 404)
    assert_problem(await anonymous.post("/api/v1/grading/preview", json={}), 401)


async def test_a_hostile_preview_is_bounded_and_the_api_keeps_answering(
    client: httpx.AsyncClient,
) -> None:
    # Before: `\pL{300}x` over a 2 MB reply graded on the event loop for about 11 s, and a
    # case could carry any number of such patterns: one request stalled every tenant.
    checks = [
        {"type": "output_not_contains", "value": r"\pL{300}x", "regex": True},
        {"type": "output_not_contains", "value": r"(a|b)*a(a|b){1000}c", "regex": True},
        *(
            {"type": "output_not_contains", "value": rf"(?:a|b){{{n}}}c", "regex": True}
            for n in range(1, 60)
        ),
    ]
    body = {"input": "q", "checks": checks, "actual_output": "ab" * 1_000_000}

    async def health_while(task: asyncio.Task[httpx.Response]) -> int:
        answered = 0
        while not task.done():
            assert (await client.get("/health", timeout=5)).status_code == 200
            answered += 1
        return answered

    preview = asyncio.create_task(client.post("/api/v1/grading/preview", json=body))
    answered = await health_while(preview)
    response = await preview
    assert response.status_code == 200, response.text
    results = response.json()["result"]["check_results"]
    assert results[0]["status"] == "failed" and "at most 5,000" in results[0]["detail"]
    assert results[1]["status"] == "not_graded" and results[1]["detail"].startswith("Not run")
    assert answered >= 1, "the API answered while the preview was graded"
