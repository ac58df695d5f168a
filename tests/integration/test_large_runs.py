"""Runs too large to hold at once: every case listed in order, each page of results bounded."""

from __future__ import annotations

import httpx
import msgspec

from tests.support.api import create_case, create_dataset


async def test_a_ci_run_of_many_cases_lists_every_case_in_order(client: httpx.AsyncClient) -> None:
    # The list is streamed a page at a time instead of built whole in memory.
    dataset = await create_dataset(client, data_context={"region": "eu"})
    lines = b"".join(
        msgspec.json.encode({"input": f"case {n}", "description": f"d{n}"}) + b"\n"
        for n in range(1_203)
    )
    imported = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines,
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201
    created = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})
    assert created.status_code == 201
    run = created.json()
    assert run["total"] == 1_203 and run["status"] == "awaiting_results"
    assert [case["input"] for case in run["test_cases"]] == [f"case {n}" for n in range(1_203)]
    assert {case["data_context"]["region"] for case in run["test_cases"]} == {"eu"}


async def test_a_results_page_stops_before_eight_mebibytes(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    for n in range(12):
        await create_case(client, dataset["id"], description=str(n))
    created = (await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})).json()
    big = "x" * 1_000_000
    for case in created["test_cases"]:  # one at a time: each batch is under the body limit
        result = {"test_case_id": case["test_case_id"], "actual_output": big}
        posted = await client.post(
            "/api/v1/eval-run-results", json={"run_id": created["run_id"], "results": [result]}
        )
        assert posted.status_code == 200
    url = f"/api/v1/eval-runs/{created['run_id']}/results"
    first = await client.get(url, params={"limit": 50})
    assert len(first.content) <= 8 * 1024 * 1024
    page = first.json()
    assert 1 <= len(page["items"]) < 12 and page["next_cursor"] is not None
    seen = [item["test_case_id"] for item in page["items"]]
    while page["next_cursor"]:
        page = (await client.get(url, params={"limit": 50, "cursor": page["next_cursor"]})).json()
        seen += [item["test_case_id"] for item in page["items"]]
    assert sorted(seen) == sorted(case["test_case_id"] for case in created["test_cases"])
