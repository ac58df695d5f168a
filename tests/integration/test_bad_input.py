"""Malformed or hostile input on every endpoint: a 4xx problem+json naming the field, never 5xx."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import msgspec
import pytest

from agentlasso.config import Settings
from agentlasso.devstack.demo import DEMO_AGENT_PATH
from agentlasso.server import create_app
from tests.support.api import create_case, create_dataset, start_run
from tests.support.assertions import assert_problem
from tests.support.servers import serving

NUL = "\x00"  # PostgreSQL text cannot hold it, so every field refuses it by name


@pytest.fixture
async def ids(client: httpx.AsyncClient) -> dict[str, str]:
    dataset = await create_dataset(client)
    case = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "hi"})
    return {"dataset": dataset["id"], "case": case.json()["id"]}


def json_endpoints(ids: dict[str, str]) -> list[tuple[str, str]]:
    return [
        ("POST", "/api/v1/datasets"),
        ("PATCH", f"/api/v1/datasets/{ids['dataset']}"),
        ("POST", f"/api/v1/datasets/{ids['dataset']}/test-cases"),
        ("PATCH", f"/api/v1/test-cases/{ids['case']}"),
    ]


async def test_malformed_json_is_400_everywhere(
    client: httpx.AsyncClient, ids: dict[str, str]
) -> None:
    for method, url in json_endpoints(ids):
        for body in (b"{not json", b'{"name": "x"', b"\xff\xfe", b""):
            response = await client.request(
                method, url, content=body, headers={"content-type": "application/json"}
            )
            assert_problem(response, 400)


async def test_wrong_types_are_422_naming_the_field(
    client: httpx.AsyncClient, ids: dict[str, str]
) -> None:
    cases: list[tuple[str, str, Any, str]] = [
        ("POST", "/api/v1/datasets", {"name": 5}, "/name"),
        ("POST", "/api/v1/datasets", {"name": "x", "data_context": [1]}, "/data_context"),
        ("POST", "/api/v1/datasets", [], "/"),
        ("PATCH", f"/api/v1/datasets/{ids['dataset']}", {"name": ""}, "/name"),
        ("POST", f"/api/v1/datasets/{ids['dataset']}/test-cases", {"input": 5}, "/input"),
        (
            "POST",
            f"/api/v1/datasets/{ids['dataset']}/test-cases",
            {"input": "x", "min_confidence": 101},
            "/min_confidence",
        ),
        (
            "POST",
            f"/api/v1/datasets/{ids['dataset']}/test-cases",
            {"input": "x", "evaluation_type": "FUZZY"},
            "/evaluation_type",
        ),
        (
            "PATCH",
            f"/api/v1/test-cases/{ids['case']}",
            {"checks": [{"type": "tool_order", "tools": "a"}]},
            "/checks/0/tools",
        ),
        (
            "PATCH",
            f"/api/v1/test-cases/{ids['case']}",
            {"checks": [{"type": "output_contains", "value": "a", "severity": "fatal"}]},
            "/checks/0/severity",
        ),
    ]
    for method, url, body, pointer in cases:
        assert_problem(await client.request(method, url, json=body), 422, pointer=pointer)


async def test_unknown_check_type_names_the_check(
    client: httpx.AsyncClient, ids: dict[str, str]
) -> None:
    body = {"input": "x", "checks": [{"type": "tool_called", "tool": "a"}, {"type": "vibes"}]}
    response = await client.post(f"/api/v1/datasets/{ids['dataset']}/test-cases", json=body)
    problem = assert_problem(response, 422, pointer="/checks/1/type")
    assert "unknown check type" in problem["errors"][0]["detail"]
    assert "tool_called" in problem["errors"][0]["detail"]


async def test_missing_fields_are_422_naming_them(
    client: httpx.AsyncClient, ids: dict[str, str]
) -> None:
    url = f"/api/v1/datasets/{ids['dataset']}/test-cases"
    assert_problem(await client.post("/api/v1/datasets", json={}), 422, pointer="/name")
    assert_problem(await client.post(url, json={"checks": []}), 422, pointer="/input")
    missing_tool = {"input": "x", "checks": [{"type": "tool_called"}]}
    assert_problem(await client.post(url, json=missing_tool), 422, pointer="/checks/0/tool")
    missing_criterion = {"input": "x", "checks": [{"type": "llm_judge", "severity": "minor"}]}
    assert_problem(
        await client.post(url, json=missing_criterion), 422, pointer="/checks/0/criterion"
    )


async def test_unknown_fields_are_422_naming_them(
    client: httpx.AsyncClient, ids: dict[str, str]
) -> None:
    url = f"/api/v1/datasets/{ids['dataset']}/test-cases"
    assert_problem(await client.post(url, json={"input": "x", "inptu": 1}), 422, pointer="/inptu")
    body = {"input": "x", "checks": [{"type": "output_valid_json", "value": "x"}]}
    assert_problem(await client.post(url, json=body), 422, pointer="/checks/0/value")


async def test_duplicate_check_ids_are_422(client: httpx.AsyncClient, ids: dict[str, str]) -> None:
    checks = [
        {"id": "refund", "type": "tool_called", "tool": "a"},
        {"id": "refund", "type": "tool_called", "tool": "b"},
    ]
    response = await client.patch(f"/api/v1/test-cases/{ids['case']}", json={"checks": checks})
    problem = assert_problem(response, 422, pointer="/checks/1/id")
    assert "refund" in problem["errors"][0]["detail"]


async def test_the_expectation_check_id_is_reserved(
    client: httpx.AsyncClient, ids: dict[str, str]
) -> None:
    checks = [{"id": "expectation", "type": "llm_judge", "criterion": "polite"}]
    response = await client.patch(f"/api/v1/test-cases/{ids['case']}", json={"checks": checks})
    problem = assert_problem(response, 422, pointer="/checks/0/id")
    assert "reserved" in problem["errors"][0]["detail"]


async def test_oversized_body_is_413(client: httpx.AsyncClient, ids: dict[str, str]) -> None:
    huge = b'{"name": "' + b"x" * (11 * 1024 * 1024) + b'"}'
    for method, url in json_endpoints(ids):
        response = await client.request(
            method, url, content=huge, headers={"content-type": "application/json"}
        )
        assert_problem(response, 413)


async def test_bad_query_parameters_are_422(client: httpx.AsyncClient, ids: dict[str, str]) -> None:
    for url in ("/api/v1/datasets", f"/api/v1/datasets/{ids['dataset']}/test-cases"):
        assert_problem(await client.get(url, params={"limit": "many"}), 422, parameter="limit")
        assert_problem(await client.get(url, params={"limit": 0}), 422, parameter="limit")
        assert_problem(await client.get(url, params={"limit": 5000}), 422, parameter="limit")
        assert_problem(await client.get(url, params={"cursor": "!!"}), 422, parameter="cursor")


async def test_unknown_ids_and_routes_are_404(client: httpx.AsyncClient) -> None:
    for url in (
        "/api/v1/datasets/not-a-uuid",
        "/api/v1/datasets/00000000-0000-0000-0000-000000000000",
        "/api/v1/test-cases/%00",
        "/api/v1/nothing-here",
    ):
        assert_problem(await client.get(url), 404)


async def test_wrong_method_is_405(client: httpx.AsyncClient) -> None:
    assert_problem(await client.put("/api/v1/datasets", json={}), 405)


async def test_import_bad_content_type_is_415(
    client: httpx.AsyncClient, ids: dict[str, str]
) -> None:
    response = await client.post(
        f"/api/v1/datasets/{ids['dataset']}/test-cases/import",
        content=b'{"input": "x"}\n',
        headers={"content-type": "text/csv"},
    )
    assert_problem(response, 415)


def nested(depth: int) -> str:
    """JSON text of arrays nested `depth` levels deep, objects every other level."""
    opening = "".join('{"k": ' if level % 2 else "[" for level in range(depth))
    closing = "".join("}" if level % 2 else "]" for level in reversed(range(depth)))
    return f"{opening}1{closing}"


def with_value(body_before: str, depth: int, body_after: str = "}") -> bytes:
    """A request body holding one value nested `depth` levels deep."""
    return f"{body_before}{nested(depth)}{body_after}".encode()


# The body's own object is one level: a value nested 63 deep inside it is 64 in all.
@pytest.mark.parametrize("depth", [65, 200, 1_000, 5_000, 100_000])
async def test_json_nested_too_deeply_is_422_naming_the_field(
    client: httpx.AsyncClient, ids: dict[str, str], depth: int
) -> None:
    headers = {"content-type": "application/json"}
    bodies = [
        ("POST", "/api/v1/datasets",
         with_value('{"name": "deep", "data_context": {"a": ', depth, "}}"), "/data_context/a"),
        ("POST", f"/api/v1/datasets/{ids['dataset']}/test-cases",
         with_value('{"input": "x", "evaluation_criteria_json": {"a": ', depth, "}}"),
         "/evaluation_criteria_json/a"),
        ("PATCH", f"/api/v1/test-cases/{ids['case']}",
         with_value('{"evaluation_criteria_json": {"m": ', depth, "}}"),
         "/evaluation_criteria_json/m"),
    ]  # fmt: skip
    for method, url, body, field in bodies:
        response = await client.request(method, url, content=body, headers=headers)
        problem = assert_problem(response, 422)
        (error,) = problem["errors"]
        assert error["pointer"].startswith(field), error
        assert "Nested more than 64 levels" in error["detail"]


@pytest.mark.parametrize("depth", [10, 60])
async def test_json_nested_within_the_limit_is_taken(
    client: httpx.AsyncClient, ids: dict[str, str], depth: int
) -> None:
    body = with_value('{"name": "nested", "data_context": {"a": ', depth, "}}")
    response = await client.post(
        "/api/v1/datasets", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 201, response.text
    read = await client.get(f"/api/v1/datasets/{response.json()['id']}")
    assert read.json()["data_context"] == {"a": json.loads(nested(depth))}


async def test_the_demo_agent_refuses_json_nested_too_deeply(settings: Settings) -> None:
    async with (
        serving(create_app(msgspec.structs.replace(settings, demo_agent=True))) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        deep = with_value('{"input": ', 100_000)
        refused = await http.post(
            DEMO_AGENT_PATH, content=deep, headers={"content-type": "application/json"}
        )
        answered = await http.post(DEMO_AGENT_PATH, json={"input": "Where is my refund?"})
    (error,) = assert_problem(refused, 422)["errors"]
    assert error["pointer"].startswith("/input/0/k"), error
    assert answered.status_code == 200, answered.text


async def test_nul_in_an_agent_error_a_client_posts_is_refused_naming_it(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    case = await create_case(client, dataset["id"])
    run = await start_run(client, dataset_id=dataset["id"])
    posted = await client.post(
        "/api/v1/eval-run-results",
        json={
            "run_id": run["run_id"],
            "results": [{"test_case_id": case["id"], "agent_error": NUL}],
        },
    )
    assert_problem(posted, 422, pointer="/results/0/agent_error")


async def test_nul_in_anything_written_is_a_422_naming_the_field(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    case_url = f"/api/v1/datasets/{dataset['id']}/test-cases"
    refused: list[tuple[str, str, Any, str]] = [
        ("POST", "/api/v1/datasets", {"name": f"a{NUL}b"}, "/name"),
        ("POST", "/api/v1/datasets", {"name": "ok", "data_context": {"k": [f"v{NUL}"]}},
         "/data_context/k/0"),
        ("PATCH", f"/api/v1/datasets/{dataset['id']}", {"description": NUL}, "/description"),
        ("POST", case_url, {"input": {"q": NUL}}, "/input/q"),
        ("POST", case_url, {"input": "x", "checks": [{"type": "tool_called", "tool": NUL}]},
         "/checks/0/tool"),
        ("POST", case_url, {"input": "x", "expected_output": NUL}, "/expected_output"),
        ("POST", "/api/v1/agents", {"name": NUL, "url": "http://127.0.0.1:9/a"}, "/name"),
        ("POST", "/api/v1/eval-runs", {"dataset_id": dataset["id"], "labels": {"sha": NUL}},
         "/labels/sha"),
    ]  # fmt: skip
    for method, url, body, pointer in refused:
        response = await client.request(method, url, json=body)
        assert_problem(response, 422, pointer=pointer)
    imported = await client.post(
        f"{case_url}/import",
        content=msgspec.json.encode({"input": "ok"}) + b"\n" + msgspec.json.encode({"input": NUL}),
        headers={"content-type": "application/x-ndjson"},
    )
    body = assert_problem(imported, 422, pointer="/input")
    assert body["errors"][0]["line"] == 2


async def test_a_checks_version_beyond_int32_is_a_422(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    url = f"/api/v1/datasets/{dataset['id']}/test-cases"
    created = await client.post(url, json={"input": "x", "checks_version": 2**31})
    assert_problem(created, 422, pointer="/checks_version")
    case = await create_case(client, dataset["id"])
    patched = await client.patch(f"/api/v1/test-cases/{case['id']}", json={"checks_version": 2**40})
    assert_problem(patched, 422, pointer="/checks_version")


@pytest.mark.parametrize(
    "cursor",
    [
        base64.urlsafe_b64encode(b"s99999999999999999999").decode().rstrip("="),
        base64.urlsafe_b64encode(b"s-5").decode().rstrip("="),
        base64.urlsafe_b64encode(b"s1e5").decode().rstrip("="),
    ],
)
async def test_a_cursor_out_of_range_is_a_422(client: httpx.AsyncClient, cursor: str) -> None:
    for url in ("/api/v1/datasets", "/api/v1/agents", "/api/v1/eval-runs"):
        assert_problem(await client.get(url, params={"cursor": cursor}), 422, parameter="cursor")


async def test_a_405_says_which_methods_are_allowed(client: httpx.AsyncClient) -> None:
    response = await client.put("/api/v1/datasets")
    assert_problem(response, 405)
    assert set(response.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


async def test_a_case_with_more_than_a_hundred_checks_is_refused(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    checks = [{"type": "output_contains", "value": f"v{n}"} for n in range(101)]
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "x", "checks": checks}
    )
    assert_problem(response, 422, pointer="/checks")
