"""Runs made through the API for the web app's tests to look at."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.api import create_dataset, start_run

REFUND = {"type": "output_contains", "value": "3-5 business days", "id": "delay"}
NO_CANCEL = {"type": "tool_not_called", "tool": "orders.cancel", "id": "keep"}


async def ci_run_with_one_failure(client: httpx.AsyncClient) -> dict[str, Any]:
    """A finished CI run of two cases: the refund question fails (the agent cancelled the
    order and gave no delay), the greeting passes."""
    dataset = await create_dataset(client, name="Refunds")
    cases = [
        ("Where is my refund for order 1234?", "A refund question", [REFUND, NO_CANCEL]),
        ("Hello", "A greeting", [{"type": "output_contains", "value": "hello", "id": "hi"}]),
    ]
    ids = []
    for text, description, checks in cases:
        created = await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases",
            json={"input": text, "description": description, "checks": checks},
        )
        assert created.status_code == 201, created.text
        ids.append(created.json()["id"])
    run = await start_run(client, dataset_id=dataset["id"])
    posted = await client.post(
        "/api/v1/eval-run-results",
        json={
            "run_id": run["run_id"],
            "results": [
                {
                    "test_case_id": ids[0],
                    "actual_output": "I cancelled the order for you.",
                    "actual_tool_calls": [{"name": "orders.cancel", "arguments": {"order": 1234}}],
                },
                {"test_case_id": ids[1], "actual_output": "Hello!", "actual_tool_calls": []},
            ],
        },
    )
    assert posted.status_code == 200, posted.text
    return {"run_id": run["run_id"], "failing": ids[0], "passing": ids[1]}
