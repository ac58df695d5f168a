"""The API does what its OpenAPI description says, and the description says all it does.

Schemathesis (test_schemathesis.py) checks the two against each other at large; these are the
specific promises a client reads in the description: every status an operation can answer,
the methods of a path, the numbers a field takes, the judge models a project may choose, and
what to call next with what an operation created.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest
from litestar.routes import HTTPRoute

from app.api.app import create_app
from app.api.openapi import ERRORS, EVERY_OPERATION, LINKS
from app.api.openapi_examples import BODY_EXAMPLES
from app.api.run_results import MAX_RESULTS_PER_POST
from app.api.strict_bodies import SLICED_ABOVE_BYTES
from app.config import Settings
from tests.support.api import create_dataset
from tests.support.assertions import assert_problem

DOCUMENTED_METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def description(settings: Settings) -> dict[str, Any]:
    return create_app(settings).openapi_schema.to_schema()


def operations(description: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    return {
        operation["operationId"]: (path, method, operation)
        for path, item in description["paths"].items()
        for method, operation in item.items()
        if method in DOCUMENTED_METHODS
    }


def test_every_operation_lists_every_status_it_can_answer(description: dict[str, Any]) -> None:
    found = operations(description)
    api = {name for name, (path, _, _) in found.items() if path.startswith("/api/v1")}
    # A new operation cannot go undocumented: it must be given its statuses in ERRORS.
    assert api == set(ERRORS)
    for name in api:
        _, _, operation = found[name]
        documented = set(operation["responses"])
        assert {str(status) for status in (*EVERY_OPERATION, *ERRORS[name])} <= documented
        assert any(status.startswith("2") for status in documented), name
        assert operation["security"] == [{"apiKey": []}], name
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                assert list(response["content"]) == ["application/problem+json"], (name, status)


def test_every_example_body_is_a_valid_request(settings: Settings) -> None:
    app = create_app(settings)
    body_types = {
        handler.operation_id: handler.parsed_fn_signature.parameters["data"].annotation
        for route in app.routes
        if isinstance(route, HTTPRoute)
        for handler in route.route_handlers
        if "data" in handler.parsed_fn_signature.parameters
    }
    assert set(BODY_EXAMPLES) <= set(body_types)
    for operation_id, example in BODY_EXAMPLES.items():
        msgspec.json.decode(
            msgspec.json.encode(example), type=body_types[operation_id], strict=True
        )
    operations_with_json_bodies = {
        operation_id for operation_id, body_type in body_types.items() if body_type is not Any
    }
    assert operations_with_json_bodies <= set(BODY_EXAMPLES)


def test_created_objects_link_to_what_takes_them(description: dict[str, Any]) -> None:
    found = operations(description)
    for creator, (parameter, _, takers) in LINKS.items():
        links = found[creator][2]["responses"]["201"]["links"]
        assert set(links) == set(takers)
        for taker in takers:
            path, _, _ = found[taker]
            assert "{" + parameter + "}" in path, (creator, taker)


async def test_options_lists_every_method_of_the_path(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    expected = {
        "/api/v1/datasets": {"GET", "POST", "OPTIONS"},
        f"/api/v1/datasets/{dataset['id']}": {"GET", "PATCH", "DELETE", "OPTIONS"},
        "/api/v1/judge-settings": {"GET", "PATCH", "OPTIONS"},
        "/api/v1/agents": {"GET", "POST", "OPTIONS"},
    }
    for url, methods in expected.items():
        response = await client.options(url)
        assert response.status_code == 204, url
        assert set(response.headers["allow"].replace(" ", "").split(",")) == methods, url


async def test_a_whole_number_written_as_a_float_is_an_integer(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    cases_url = f"/api/v1/datasets/{dataset['id']}/test-cases"
    # Python's json writes 70.0 for a float that happens to be whole; JSON Schema calls it an
    # integer, and so does the API.
    created = await client.post(
        cases_url, json={"input": "hi", "checks_version": 3.0, "min_confidence": 80.0}
    )
    assert created.status_code == 201, created.text
    assert (created.json()["checks_version"], created.json()["min_confidence"]) == (3, 80)
    for field, value in (("min_confidence", 80.5), ("checks_version", 1e300)):
        refused = await client.post(cases_url, json={"input": "hi", field: value})
        assert_problem(refused, 422, pointer=f"/{field}")


async def test_values_of_another_type_are_refused_not_converted(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    cases_url = f"/api/v1/datasets/{dataset['id']}/test-cases"
    for field, value in (("min_confidence", "80"), ("checks_version", True)):
        refused = await client.post(cases_url, json={"input": "hi", field: value})
        assert_problem(refused, 422, pointer=f"/{field}")
    refused = await client.post(
        "/api/v1/eval-runs", json={"dataset_id": dataset["id"], "judge_cache": 0}
    )
    assert_problem(refused, 422, pointer="/judge_cache")


async def test_the_judge_models_described_are_the_ones_priced(
    client: httpx.AsyncClient, settings: Settings, description: dict[str, Any]
) -> None:
    model = description["components"]["schemas"]["JudgeSettingsUpdate"]["properties"]["model"]
    described = next(option["enum"] for option in model["anyOf"] if option.get("type") == "string")
    assert described == sorted(settings.judge_prices)
    chosen = await client.patch("/api/v1/judge-settings", json={"model": described[-1]})
    assert chosen.status_code == 200, chosen.text
    assert chosen.json()["effective_model"] == described[-1]
    unpriced = await client.patch("/api/v1/judge-settings", json={"model": "claude-unpriced"})
    assert_problem(unpriced, 422, pointer="/model")


async def test_a_large_batch_is_read_as_strictly_as_a_small_one(client: httpx.AsyncClient) -> None:
    # Over SLICED_ABOVE_BYTES a batch is decoded a slice at a time; what it accepts and refuses,
    # and where it says the problem is, is the same.
    cases = 3_000
    dataset = await create_dataset(client)
    check = {"type": "output_contains", "value": "ok"}
    lines = b"".join(
        msgspec.json.encode({"input": f"case {n}", "checks": [check]}) + b"\n" for n in range(cases)
    )
    imported = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines,
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text
    run = (await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})).json()
    padding = "ok " + "." * 400
    results: list[dict[str, Any]] = [
        {"test_case_id": case["test_case_id"], "actual_output": padding, "actual_tool_calls": []}
        for case in run["test_cases"]
    ]
    assert len(json.dumps({"run_id": run["run_id"], "results": results})) > SLICED_ABOVE_BYTES
    wrongs = {2_500: ("agent_error", 5), 2_999: ("latency_ms", 120)}  # a str; no such field
    for index, (field, wrong) in wrongs.items():
        bad = [dict(result) for result in results]
        bad[index][field] = wrong
        refused = await client.post(
            "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": bad}
        )
        assert_problem(refused, 422, pointer=f"/results/{index}/{field}")
    accepted = await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
    )
    assert accepted.status_code == 200, accepted.text[:500]
    answer = accepted.json()
    assert answer["counts"]["passed"] == cases and answer["ci_pass"] is True


async def test_a_batch_holds_at_most_its_limit_of_results(client: httpx.AsyncClient) -> None:
    results = [
        {"test_case_id": str(n), "actual_output": "x"} for n in range(MAX_RESULTS_PER_POST + 1)
    ]
    refused = await client.post(
        "/api/v1/eval-run-results", json={"run_id": "any", "results": results}
    )
    body = assert_problem(refused, 422, pointer="/results")
    assert f"{MAX_RESULTS_PER_POST}" in body["errors"][0]["detail"]
