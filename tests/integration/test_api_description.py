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
import jsonschema
import msgspec
import pytest
from litestar.routes import HTTPRoute

from agentlasso.api.openapi import ERRORS, EVERY_OPERATION
from agentlasso.api.openapi_examples import BODY_EXAMPLES
from agentlasso.api.openapi_links import LINKS
from agentlasso.api.run_results import MAX_RESULTS_PER_POST
from agentlasso.config import Settings
from agentlasso.http.strict_bodies import SLICED_ABOVE_BYTES
from agentlasso.server import create_app
from tests.support.api import create_dataset
from tests.support.assertions import assert_problem

DOCUMENTED_METHODS = ("get", "post", "put", "patch", "delete")
NUL = "\x00"


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
    reached = {"createAgent", "createDataset"}
    for creator, (status, follows) in LINKS.items():
        links = found[creator][2]["responses"][status]["links"]
        assert set(links) == set(follows)
        for taker, follow in follows.items():
            path, _, operation = found[taker]
            for parameter in follow.parameters:
                assert "{" + parameter + "}" in path, (creator, taker)
            if follow.body is not None:
                ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                properties = description["components"]["schemas"][ref.rsplit("/", 1)[-1]]
                assert set(follow.body) <= set(properties["properties"]), (creator, taker)
            reached.add(taker)
    # Every operation on something a client created is reached from its create, but those on
    # traces: a trace is stored after the export answers, by a worker (no link can wait), and
    # so is a conversation of traces; and on review items, which one call queues by the
    # thousand (the answer counts them; the queue lists them).
    on_objects = {name for name, (path, _, _) in found.items() if "{" in path}
    assert on_objects - reached == {
        "getTrace", "createTestCaseFromTrace", "getTraceConversation",
        "createTestCaseFromConversation", "getReviewItem", "labelReviewItem",
        "createTestCaseFromReviewedTrace",
    }  # fmt: skip


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
    # A number where a string goes; a latency that is not a number; no such field.
    wrongs = {2_000: ("agent_error", 5), 2_500: ("latency_ms", "fast"), 2_999: ("latency", 120)}
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


def body_is_described_valid(description: dict[str, Any], operation_id: str, body: Any) -> bool:
    """Whether the operation's request-body schema, as described, admits this JSON body."""
    _, _, operation = operations(description)[operation_id]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    document = {**schema, "components": description["components"]}
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    validator = jsonschema.Draft202012Validator(document, format_checker=checker)
    return bool(validator.is_valid(body))


BODY_SCHEMAS = ("RunCreate", "ResultsPost", "PostedResult", "GenerationCreate", "TestCaseFromTrace")
# (operation, body): bodies the server refuses because some text in them holds U+0000.
NUL_REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("createDataset", {"name": f"a{NUL}b"}),
    ("createDataset", {"name": "ok", "data_context": {"k": [{"deep": f"v{NUL}"}]}}),
    ("createDataset", {"name": "ok", "data_context": {f"k{NUL}": 1}}),
    ("updateDataset", {"description": NUL}),
    ("createTestCase", {"input": {"q": [NUL]}}),
    ("createTestCase", {"input": "x", "checks": [{"type": "tool_order", "tools": ["a", NUL]}]}),
    ("createTestCase", {"input": "x", "evaluation_criteria_json": {"a": NUL}}),
    ("previewChecks", {"input": "x", "checks": [{"type": "llm_judge", "criterion": NUL}]}),
    ("createAgent", {"name": "a", "url": "https://agent.example.com", "system_prompt": NUL}),
    ("createAgent", {"name": "a", "url": "https://agent.example.com", "tools": [{"n": NUL}]}),
    ("createRun", {"dataset_id": "00000000-0000-4000-8000-000000000000", "labels": {"a": NUL}}),
    ("generateCases", {"system_prompt": "x", "instruction": NUL}),
    ("generateCases", {"tools": [{"name": NUL}]}),
    ("postRunResults", {"run_id": "00000000-0000-4000-8000-000000000000",
                        "results": [{"test_case_id": "00000000-0000-4000-8000-000000000000",
                                     "agent_error": NUL}]}),
]  # fmt: skip
# What an agent answered, or what is sent on to one, may hold it: it is stored as it came.
NUL_ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("previewChecks", {"input": "x", "actual_output": NUL, "actual_tool_calls": [{"name": NUL}]}),
    ("previewTestCase", {"actual_output": {"text": NUL}}),
    ("invokeAgent", {"input": NUL, "context": {"a": NUL}}),
    ("postRunResults", {"run_id": "00000000-0000-4000-8000-000000000000",
                        "results": [{"test_case_id": "00000000-0000-4000-8000-000000000000",
                                     "actual_output": NUL}]}),
]  # fmt: skip


def test_the_description_says_which_text_may_not_hold_nul(description: dict[str, Any]) -> None:
    # Before: no schema said it, so schema-valid bodies were refused (422) as they still are.
    for operation_id, body in NUL_REFUSED:
        assert not body_is_described_valid(description, operation_id, body), (operation_id, body)
        without = json.loads(json.dumps(body).replace("\\u0000", "-"))
        assert body_is_described_valid(description, operation_id, without), (operation_id, body)
    for operation_id, body in NUL_ACCEPTED:
        assert body_is_described_valid(description, operation_id, body), (operation_id, body)


async def test_nul_in_a_search_or_a_generation_is_a_422_naming_it(
    client: httpx.AsyncClient,
) -> None:
    # Before: each of these was a 500 (PostgreSQL refused the text it was given).
    for parameter in ("q", "tool"):
        refused = await client.get("/api/v1/traces", params={parameter: f"a{NUL}"})
        assert_problem(refused, 422, parameter=parameter)
    dataset = await create_dataset(client)
    generate_url = f"/api/v1/datasets/{dataset['id']}/generate"
    for field, value, pointer in (
        ("instruction", f"a{NUL}", "/instruction"),
        ("system_prompt", NUL, "/system_prompt"),
        ("tools", [{"name": "t", "description": NUL}], "/tools/0/description"),
    ):
        refused = await client.post(generate_url, json={"system_prompt": "You help.", field: value})
        assert_problem(refused, 422, pointer=pointer)


async def test_the_anthropic_key_described_is_the_one_accepted(
    client: httpx.AsyncClient, description: dict[str, Any]
) -> None:
    # Before: the description admitted any 1 to 500 characters; the server refused spaces.
    for key in ("sk-ant-api03-AbC_d~!", "x" * 500):
        assert body_is_described_valid(
            description, "updateJudgeSettings", {"anthropic_api_key": key}
        )
        accepted = await client.patch("/api/v1/judge-settings", json={"anthropic_api_key": key})
        assert accepted.status_code == 200, accepted.text
    for key in ("sk ant", "sk-\u00e9", "\t", "x" * 501, ""):
        body = {"anthropic_api_key": key}
        assert not body_is_described_valid(description, "updateJudgeSettings", body), key
        refused = await client.patch("/api/v1/judge-settings", json=body)
        assert_problem(refused, 422, pointer="/anthropic_api_key")


def test_ids_in_bodies_are_described_as_uuids(description: dict[str, Any]) -> None:
    # Before: `"baseline_run_id": ""` fitted the description and was refused.
    schemas = description["components"]["schemas"]
    for name, schema in schemas.items():
        for field, property_schema in schema.get("properties", {}).items():
            if field.endswith("_id") and name in BODY_SCHEMAS:
                strings = [property_schema, *property_schema.get("anyOf", [])]
                assert any(s.get("format") == "uuid" for s in strings), (name, field)
    some_id = "00000000-0000-4000-8000-000000000000"
    named = [
        ("createRun", {"dataset_id": some_id}, "baseline_run_id"),
        ("createRun", {"dataset_id": some_id}, "agent_id"),
        ("createRun", {}, "dataset_id"),
        ("postRunResults", {"results": []}, "run_id"),
        ("generateCases", {}, "agent_id"),
        ("createTestCaseFromTrace", {}, "dataset_id"),
    ]
    for operation_id, body, field in named:
        assert body_is_described_valid(description, operation_id, {**body, field: some_id})
        for wrong in ("", "run-1", some_id + "0"):
            assert not body_is_described_valid(description, operation_id, {**body, field: wrong})


def test_an_agent_is_described_as_the_server_takes_it(description: dict[str, Any]) -> None:
    # Before: any 1 to 2048 characters was a URL, and any header name or value was one.
    base = {"name": "bot"}
    for url in ("https://agent.example.com/chat", "http://10.0.0.7:8080/a?b=c"):
        assert body_is_described_valid(description, "createAgent", {**base, "url": url}), url
    for url in ("ftp://agent.example.com", "agent.example.com", "https://user:pw@agent.example.com",
                "https://", "http://a b/"):  # fmt: skip
        assert not body_is_described_valid(description, "createAgent", {**base, "url": url}), url
    url = "https://agent.example.com"
    for headers in ({"Authorization": "Bearer x"}, {"x-k": ""}):
        assert body_is_described_valid(
            description, "createAgent", {**base, "url": url, "headers": headers}
        )
    for headers in ({"a b": "x"}, {"x-k": " x"}, {"x-k": "a\nb"}, {"Host": "x"}, {"": "x"}):
        body = {**base, "url": url, "headers": headers}
        assert not body_is_described_valid(description, "createAgent", body), headers


def test_an_otlp_json_body_is_described_to_its_spans(description: dict[str, Any]) -> None:
    # Before: `{"resourceSpans": [[null, null]]}` fitted the description; the server said 400.
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "turn",
        "startTimeUnixNano": "1",
        "attributes": [{"key": "k", "value": {"arrayValue": {"values": [{"intValue": "3"}]}}}],
    }
    good = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    assert body_is_described_valid(description, "exportTraces", good)
    for bad in (
        {"resourceSpans": [[None]]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [1]}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"value": {}}]}]}]}]},
    ):
        assert not body_is_described_valid(description, "exportTraces", bad), bad
