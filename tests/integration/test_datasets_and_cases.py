"""Datasets and test cases: create, read, update, delete, revisions, pagination, warnings."""

from __future__ import annotations

import httpx

from tests.support.api import create_case, create_dataset, start_run
from tests.support.assertions import assert_problem


async def test_dataset_lifecycle(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client, description="refunds", data_context={"region": "eu"})
    assert dataset["name"] == "support" and dataset["data_context"] == {"region": "eu"}
    url = f"/api/v1/datasets/{dataset['id']}"
    assert (await client.get(url)).json() == dataset

    patched = (await client.patch(url, json={"description": None, "name": "renamed"})).json()
    assert patched["name"] == "renamed"
    assert patched["description"] is None
    assert patched["data_context"] == {"region": "eu"}, "absent fields are kept"

    assert (await client.delete(url)).status_code == 204
    assert_problem(await client.get(url), 404)


async def test_datasets_paginate_with_cursors(client: httpx.AsyncClient) -> None:
    created = [(await create_dataset(client, description=str(i)))["id"] for i in range(5)]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/api/v1/datasets", params=params)).json()
        seen += [item["id"] for item in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == created
    assert pages == 3


async def test_case_gets_check_ids_and_defaults(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    checks = [
        {"type": "tool_called", "tool": "stripe.refund"},
        {"id": "c1", "type": "output_contains", "value": "3-5 business days"},
        {"type": "output_valid_json", "severity": "minor"},
    ]
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases",
        json={"input": {"message": "refund"}, "checks": checks},
    )
    assert response.status_code == 201, response.text
    case = response.json()
    assert [check["id"] for check in case["checks"]] == ["c2", "c1", "c3"]
    assert [check["severity"] for check in case["checks"]] == ["critical", "critical", "minor"]
    assert case["input"] == {"message": "refund"}
    assert case["checks_version"] == 1 and case["revision"] == 1
    assert case["evaluation_type"] == "SCORE" and case["min_confidence"] == 70
    assert case["warnings"] == []


async def test_invalid_regex_is_accepted_with_a_warning(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    checks = [
        {"type": "output_not_contains", "value": "(unclosed", "regex": True},
        {"type": "output_contains", "value": "(plain text is fine", "regex": False},
    ]
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "x", "checks": checks}
    )
    assert response.status_code == 201, response.text
    warnings = response.json()["warnings"]
    assert len(warnings) == 1
    assert warnings[0]["check_id"] == "c1" and warnings[0]["pointer"] == "/checks/0/value"
    assert "missing )" in warnings[0]["detail"]


async def test_every_update_makes_a_revision_and_keeps_other_fields(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    created = (
        await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases",
            json={"input": "hi", "expected_output": "a greeting", "description": "smoke"},
        )
    ).json()
    url = f"/api/v1/test-cases/{created['id']}"
    first = (await client.patch(url, json={"min_confidence": 0})).json()
    second = (await client.patch(url, json={"checks": [{"type": "output_valid_json"}]})).json()
    assert (first["revision"], second["revision"]) == (2, 3)
    assert second["min_confidence"] == 0 and second["expected_output"] == "a greeting"
    assert second["checks"][0]["id"] == "c1"
    assert (await client.get(url)).json()["revision"] == 3


async def test_older_case_with_criteria_json_is_kept_as_stored(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    criteria = {"expected_tool_calls": [{"name": "orders.lookup"}], "guardrails": ["guarantee"]}
    case = (
        await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases",
            json={"input": "hi", "evaluation_criteria_json": criteria},
        )
    ).json()
    assert case["checks"] is None
    assert case["evaluation_criteria_json"] == criteria


async def test_deleting_a_case_removes_it_from_the_dataset(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    url = f"/api/v1/datasets/{dataset['id']}/test-cases"
    ids = [(await client.post(url, json={"input": str(i)})).json()["id"] for i in range(3)]
    assert (await client.delete(f"/api/v1/test-cases/{ids[1]}")).status_code == 204
    listed = (await client.get(url)).json()
    assert [item["id"] for item in listed["items"]] == [ids[0], ids[2]]
    assert_problem(await client.get(f"/api/v1/test-cases/{ids[1]}"), 404)


async def test_a_dataset_with_a_finished_run_is_deleted_and_its_run_stays_readable(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    case = await create_case(
        client, dataset["id"], checks=[{"type": "output_contains", "value": "x"}]
    )
    run = await start_run(client, dataset_id=dataset["id"])
    result = {"test_case_id": case["id"], "actual_output": "x"}
    await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": [result]}
    )

    # Before: a foreign key from the run's pinned cases made this a 500.
    deleted = await client.delete(f"/api/v1/datasets/{dataset['id']}")
    assert deleted.status_code == 204, deleted.text

    assert_problem(await client.get(f"/api/v1/datasets/{dataset['id']}"), 404)
    assert_problem(await client.get(f"/api/v1/test-cases/{case['id']}"), 404)
    listed = (await client.get("/api/v1/datasets")).json()["items"]
    assert dataset["id"] not in [item["id"] for item in listed]
    kept = (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()
    assert kept["status"] == "completed" and kept["ci_pass"] is True
    results = (await client.get(f"/api/v1/eval-runs/{run['run_id']}/results")).json()["items"]
    assert [item["actual_output"] for item in results] == ["x"]
    again = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})
    assert_problem(again, 404, pointer="/dataset_id")


async def test_deleting_a_dataset_with_a_run_going_on_is_refused_naming_the_run(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    await create_case(client, dataset["id"])
    run = await start_run(client, dataset_id=dataset["id"])

    refused = assert_problem(await client.delete(f"/api/v1/datasets/{dataset['id']}"), 409)
    assert run["run_id"] in refused["detail"]
    assert (await client.get(f"/api/v1/datasets/{dataset['id']}")).status_code == 200

    await client.post(f"/api/v1/eval-runs/{run['run_id']}/cancel")
    assert (await client.delete(f"/api/v1/datasets/{dataset['id']}")).status_code == 204
    assert (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()["status"] == "cancelled"
