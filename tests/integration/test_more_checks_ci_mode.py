"""The checks of contract section 17 in CI mode, as a CI client meets them over HTTP: a run
started with the agent's `tools`, results posted with `latency_ms`, each check's verdict and
detail in the answer and again in the stored results; and the bad input refused, naming where."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.api import create_dataset
from tests.support.assertions import assert_problem

REFUND_TOOLS = [
    {
        "name": "stripe.refund",
        "description": "Refund an order",
        "input_schema": {
            "type": "object",
            "required": ["order", "amount"],
            "properties": {
                "order": {"type": "string"},
                "amount": {"type": "integer", "minimum": 1},
            },
        },
    },
    # OpenAI's shape declares a tool too.
    {
        "type": "function",
        "function": {
            "name": "orders.lookup",
            "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
        },
    },
]
ORDER_SCHEMA = {
    "type": "object",
    "required": ["order_id", "refund"],
    "properties": {"order_id": {"type": "string"}, "refund": {"type": "boolean"}},
}


def lookup(order: str = "A-17") -> dict[str, Any]:
    return {"name": "orders.lookup", "arguments": {"order": order}}


def refund(**arguments: Any) -> dict[str, Any]:
    # Sent as a JSON string, as OpenAI's tool calls carry them: parsed before comparing.
    return {"function": {"name": "stripe.refund", "arguments": json.dumps(arguments)}}


# A tool order's entry that names the arguments that call must have.
REFUND_OF_10_OR_MORE = {"tool": "stripe.refund", "arguments": {"amount": {"$gte": 10}}}
# description -> (checks, what the agent did). One case per new check type, and tool arguments.
CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "equals": (
        [{"type": "output_equals", "value": "Refund issued"}],
        {"actual_output": "  refund issued\n", "actual_tool_calls": []},
    ),
    "equals exactly": (
        [{"type": "output_equals", "value": "Refund issued", "ignore_case": False}],
        {"actual_output": "refund issued", "actual_tool_calls": []},
    ),
    "schema": (
        [{"type": "output_matches_schema", "schema": ORDER_SCHEMA}],
        {"actual_output": '{"order_id": 1234, "refund": true}'},
    ),
    "max calls": (
        [{"type": "max_tool_calls", "count": 1, "tool": "orders.lookup"},
         {"type": "max_tool_calls", "count": 3}],
        {"actual_output": "done", "actual_tool_calls": [lookup(), lookup("A-18")]},
    ),
    "slow": (
        [{"type": "latency_below", "ms": 2000}],
        {"actual_output": "done", "latency_ms": 2500},
    ),
    "fast": (
        [{"type": "latency_below", "ms": 2000}],
        {"actual_output": "done", "latency_ms": 1999},
    ),
    "untimed": (
        [{"type": "output_contains", "value": "done"},
         {"type": "latency_below", "ms": 2000, "severity": "minor"}],
        {"actual_output": "done"},
    ),
    "bad arguments": (
        [{"type": "tool_args_valid"}],
        {"actual_output": "done",
         "actual_tool_calls": [lookup(), refund(order="A-17", amount="42")]},
    ),
    "good arguments": (
        [{"type": "tool_args_valid", "tool": "stripe.refund"}],
        {"actual_output": "done",
         "actual_tool_calls": [lookup(), refund(order="A-17", amount=42)]},
    ),
    "refund of 42": (
        [{"type": "tool_called", "tool": "stripe.refund",
          "arguments": {"amount": 42, "order": {"$regex": "^A-\\d+$"}}}],
        {"actual_output": "done", "actual_tool_calls": [refund(order="A-17", amount=42)]},
    ),
    "refund of 50": (
        [{"type": "tool_called", "tool": "stripe.refund", "arguments": {"amount": 42}}],
        {"actual_output": "done", "actual_tool_calls": [refund(order="A-17", amount=50)]},
    ),
    "lookup then refund": (
        [{"type": "tool_order", "tools": ["orders.lookup", REFUND_OF_10_OR_MORE]}],
        {"actual_output": "done",
         "actual_tool_calls": [lookup(), refund(order="A-17", amount=5),
                               refund(order="A-17", amount=20)]},
    ),
    "refund too small": (
        [{"type": "tool_order", "tools": ["orders.lookup", REFUND_OF_10_OR_MORE]}],
        {"actual_output": "done", "actual_tool_calls": [lookup(), refund(order="A-17", amount=5)]},
    ),
}  # fmt: skip


async def dataset_with(client: httpx.AsyncClient, cases: list[dict[str, Any]]) -> str:
    dataset = await create_dataset(client, name="more checks")
    for case in cases:
        response = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
        assert response.status_code == 201, response.text
    return str(dataset["id"])


async def start(client: httpx.AsyncClient, dataset_id: str, **fields: Any) -> dict[str, Any]:
    response = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id, **fields})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def post(client: httpx.AsyncClient, run_id: str, results: list[dict[str, Any]]) -> Any:
    return await client.post(
        "/api/v1/eval-run-results", json={"run_id": run_id, "results": results}
    )


# What each case's checks say, as the API returns them: (status, detail) per check.
VERDICTS = {
    "equals": [("passed", 'The reply equals "Refund issued".')],
    "equals exactly": [
        ("failed", 'The reply does not equal "Refund issued": it was "refund issued". '
                   "Only the letter case differs (ignore_case is off)."),
    ],
    "schema": [
        ("failed", "The reply does not match the schema: $.order_id: 1234 is not of type string."),
    ],
    "max calls": [
        ("failed", "The agent made 2 calls of orders.lookup; at most 1 allowed. "
                   "The agent called: orders.lookup, orders.lookup."),
        ("passed", "The agent made 2 tool calls; at most 3 allowed."),
    ],
    "slow": [("failed", "The agent answered in 2,500 ms, over the 2,000 ms allowed.")],
    "fast": [("passed", "The agent answered in 1,999 ms, within the 2,000 ms allowed.")],
    "untimed": [
        ("passed", 'The reply contains "done".'),
        ("not_graded", "The agent call's latency was not reported (a CI client posts "
                       "latency_ms), so this check cannot be graded."),
    ],
    "bad arguments": [
        ("failed", "stripe.refund was called with arguments that are not valid: "
                   '$.amount: "42" is not of type integer.'),
    ],
    "good arguments": [("passed", "The call of stripe.refund had valid arguments.")],
    "refund of 42": [("passed", "stripe.refund was called with the expected arguments.")],
    "refund of 50": [("failed", "stripe.refund was called with amount 50; expected 42.")],
    "lookup then refund": [
        ("passed", "The tools were called in this order: orders.lookup -> stripe.refund."),
    ],
    "refund too small": [
        ("failed", "Expected the tools in this order: orders.lookup -> stripe.refund. "
                   "stripe.refund was called with amount 5; expected at least 10. "
                   "The agent called: orders.lookup, stripe.refund."),
    ],
}  # fmt: skip
PASSING = {"equals", "fast", "untimed", "good arguments", "refund of 42", "lookup then refund"}
NO_TOOLS_DECLARED = (
    "The agent declares no tools with an input_schema (Settings: your agent; in CI mode, the "
    "run's tools), so their arguments cannot be checked."
)


async def stored_results(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/v1/eval-runs/{run_id}/results", params={"limit": 100})
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def verdicts(result: dict[str, Any]) -> list[tuple[str, str]]:
    """Each check's status and detail, in order."""
    return [(check["status"], check["detail"]) for check in result["check_results"]]


async def test_each_new_check_grades_a_posted_result_with_its_detail(
    client: httpx.AsyncClient,
) -> None:
    cases = [{"input": name, "description": name, "checks": checks}
             for name, (checks, _) in CASES.items()]  # fmt: skip
    run = await start(client, await dataset_with(client, cases), tools=REFUND_TOOLS)
    name_of = {case["test_case_id"]: case["input"] for case in run["test_cases"]}
    posted = [{"test_case_id": case_id, **CASES[name][1]} for case_id, name in name_of.items()]
    answer = await post(client, run["run_id"], posted)
    assert answer.status_code == 200, answer.text
    body = answer.json()

    graded = {name_of[r["test_case_id"]]: r for r in body["results"]}
    assert {name: verdicts(result) for name, result in graded.items()} == VERDICTS
    assert {name for name, result in graded.items() if result["pass_fail"]} == PASSING
    # A minor check not graded leaves the case passing, flagged as partly graded.
    assert graded["untimed"]["partially_graded"] is True
    assert graded["untimed"]["check_results"][1]["passed"] is None
    assert graded["slow"]["check_results"][0]["type"] == "latency_below"
    assert body["status"] == "completed" and body["ci_pass"] is False
    assert body["counts"]["graded"] == 13 and body["counts"]["passed"] == 6
    assert body["ci_fail_reason"] == (
        "Pass rate 46.2% is below the threshold 100.0%: 7 of 13 graded cases failed."
    )

    # Read back after the fact: the same verdicts.
    stored = {name_of[r["test_case_id"]]: r for r in await stored_results(client, run["run_id"])}
    assert {name: r["check_results"] for name, r in stored.items()} == {
        name: r["check_results"] for name, r in graded.items()
    }
    assert {name: r["pass_fail"] for name, r in stored.items()} == {
        name: name in PASSING for name in CASES
    }
    # The posted latency reads back beside the verdict it decided; none was posted for others.
    assert (stored["slow"]["latency_ms"], stored["fast"]["latency_ms"]) == (2500, 1999)
    assert "latency_ms" not in stored["untimed"] and stored["slow"]["agent_call"] is None
    gate = (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()
    assert gate["ci_pass"] is False and gate["counts"]["passed"] == 6


async def test_without_tools_a_ci_run_leaves_argument_schemas_ungraded(
    client: httpx.AsyncClient,
) -> None:
    checks = [{"type": "tool_args_valid", "severity": "minor"},
              {"type": "tool_called", "tool": "stripe.refund"}]  # fmt: skip
    run = await start(client, await dataset_with(client, [{"input": "x", "checks": checks}]))
    case_id = run["test_cases"][0]["test_case_id"]
    calls = [refund(order="A-17", amount="not a number")]
    answer = await post(
        client, run["run_id"], [{"test_case_id": case_id, "actual_output": "ok",
                                 "actual_tool_calls": calls}],
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    (result,) = answer.json()["results"]
    assert verdicts(result) == [
        ("not_graded", NO_TOOLS_DECLARED),
        ("passed", "stripe.refund was called."),
    ]
    assert result["pass_fail"] is True and answer.json()["ci_pass"] is True


async def test_a_conversation_grades_each_turns_latency_and_all_turns_together(
    client: httpx.AsyncClient,
) -> None:
    conversation = {
        "turns": [
            {"user": "I want a refund"},
            {"user": "It is A-17", "checks": [{"type": "latency_below", "ms": 1000}]},
            {"user": "Thanks", "checks": [{"type": "latency_below", "ms": 300}]},
        ]
    }
    checks = [{"type": "latency_below", "ms": 1500, "total": True},
              {"type": "latency_below", "ms": 800, "severity": "minor"},
              {"type": "latency_below", "ms": 5000, "total": True, "id": "whole"}]  # fmt: skip
    dataset_id = await dataset_with(client, [{"conversation": conversation, "checks": checks}])
    run = await start(client, dataset_id)
    case_id = run["test_cases"][0]["test_case_id"]
    turns = [{"actual_output": "Your order number?", "latency_ms": 300},
             {"actual_output": "Found it. Refund?", "latency_ms": 900},
             {"actual_output": "You are welcome.", "latency_ms": 400}]  # fmt: skip
    answer = await post(client, run["run_id"], [{"test_case_id": case_id, "turns": turns}])
    assert answer.status_code == 200, answer.text
    (result,) = answer.json()["results"]
    by_id = {c["id"]: (c.get("turn"), c["status"], c["detail"]) for c in result["check_results"]}
    assert by_id == {
        "c1": (2, "passed", "The agent answered in 900 ms, within the 1,000 ms allowed."),
        "c2": (3, "failed", "The agent answered in 400 ms, over the 300 ms allowed."),
        "c3": (None, "failed", "The 3 turns took 1,600 ms in all, over the 1,500 ms allowed."),
        "c4": (None, "failed", "Turn 2 took 900 ms, over the 800 ms allowed each turn."),
        "whole": (None, "passed", "The 3 turns took 1,600 ms in all, within the 5,000 ms allowed."),
    }
    assert result["pass_fail"] is False
    (stored,) = await stored_results(client, run["run_id"])
    assert [turn["latency_ms"] for turn in stored["turns"]] == [300, 900, 400]
    assert stored["check_results"] == result["check_results"]

    # A turn posted without its latency: that turn's check, and the total, are not graded.
    untimed = [turns[0], turns[1], {"actual_output": "You are welcome."}]
    again = await post(client, run["run_id"], [{"test_case_id": case_id, "turns": untimed}])
    status = {c["id"]: c["status"] for c in again.json()["results"][0]["check_results"]}
    assert status == {
        "c1": "passed", "c2": "not_graded", "c3": "not_graded", "c4": "failed",
        "whole": "not_graded",
    }  # fmt: skip


async def test_a_schema_that_does_not_compile_is_refused_naming_where(
    client: httpx.AsyncClient,
) -> None:
    dataset_id = await dataset_with(client, [])
    url = f"/api/v1/datasets/{dataset_id}/test-cases"
    broken = {"type": "object", "properties": {"amount": {"type": "numbr"}}}
    checks = [{"type": "output_valid_json"}, {"type": "output_matches_schema", "schema": broken}]
    response = await client.post(url, json={"input": "x", "checks": checks})
    problem = assert_problem(response, 422, pointer="/checks/1/schema/properties/amount/type")
    (error,) = problem["errors"]
    assert "numbr" in error["detail"], error
    # In a conversation's turn too, where the turn's checks are.
    conversation = {"turns": [{"user": "hi", "checks": [checks[1]]}]}
    response = await client.post(url, json={"conversation": conversation})
    assert_problem(
        response, 422, pointer="/conversation/turns/0/checks/0/schema/properties/amount/type"
    )


async def test_a_declared_tool_schema_that_does_not_compile_is_refused_naming_where(
    client: httpx.AsyncClient,
) -> None:
    # Left to grading, it would leave every call of that tool's arguments unchecked.
    broken = json.loads(json.dumps(REFUND_TOOLS))
    broken[0]["input_schema"]["properties"]["amount"]["minimum"] = "one"
    broken[1]["function"]["parameters"]["type"] = "objekt"
    dataset_id = await dataset_with(
        client, [{"input": "x", "checks": [{"type": "tool_args_valid"}]}]
    )
    response = await client.post(
        "/api/v1/eval-runs", json={"dataset_id": dataset_id, "tools": broken}
    )
    problem = assert_problem(
        response, 422, pointer="/tools/0/input_schema/properties/amount/minimum"
    )
    assert [error["pointer"] for error in problem["errors"]] == [
        "/tools/0/input_schema/properties/amount/minimum",
        "/tools/1/function/parameters/type",
    ]
    assert problem["errors"][0]["detail"].startswith(
        "The input schema of stripe.refund cannot be used at /properties/amount/minimum: "
    ), problem
    runs = await client.get("/api/v1/eval-runs", params={"dataset_id": dataset_id})
    assert runs.json()["items"] == [], "nothing was started"
    # An agent declaring them is refused the same way, created or changed.
    agent = {"name": "bot", "url": "http://127.0.0.1:9/agent", "tools": broken[1:]}
    response = await client.post("/api/v1/agents", json=agent)
    assert_problem(response, 422, pointer="/tools/0/function/parameters/type")
    created = await client.post("/api/v1/agents", json={**agent, "tools": REFUND_TOOLS})
    assert created.status_code == 201, created.text
    response = await client.patch(f"/api/v1/agents/{created.json()['id']}", json={"tools": broken})
    assert_problem(response, 422, pointer="/tools/0/input_schema/properties/amount/minimum")
    stored = await client.get(f"/api/v1/agents/{created.json()['id']}")
    assert stored.json()["tools"] == REFUND_TOOLS


async def test_a_matcher_that_is_not_one_is_refused_naming_where(
    client: httpx.AsyncClient,
) -> None:
    url = f"/api/v1/datasets/{await dataset_with(client, [])}/test-cases"
    called = {"type": "tool_called", "tool": "stripe.refund",
              "arguments": {"order": {"$regexp": "^A-"}}}  # fmt: skip
    response = await client.post(url, json={"input": "x", "checks": [called]})
    problem = assert_problem(response, 422, pointer="/checks/0/arguments/order/$regexp")
    assert "$regexp is not a matcher" in problem["errors"][0]["detail"], problem
    step = {"tool": "stripe.refund", "arguments": {"amount": {"$gte": "10"}}}
    order = {"type": "tool_order", "tools": ["orders.lookup", step]}
    response = await client.post(
        url, json={"input": "x", "checks": [{"type": "output_valid_json"}, order]}
    )
    assert_problem(response, 422, pointer="/checks/1/tools/1/arguments/amount/$gte")
    bad_regex = {"type": "tool_called", "tool": "t", "arguments": {"order": {"$regex": "(a"}}}
    response = await client.post(url, json={"input": "x", "checks": [bad_regex]})
    assert_problem(response, 422, pointer="/checks/0/arguments/order/$regex")


async def test_tools_are_for_ci_mode_and_latency_is_a_whole_number(
    client: httpx.AsyncClient,
) -> None:
    checks = [{"type": "latency_below", "ms": 100}]
    dataset_id = await dataset_with(client, [{"input": "x", "checks": checks}])
    agent = await client.post(
        "/api/v1/agents", json={"name": "bot", "url": "http://127.0.0.1:9/agent"}
    )
    assert agent.status_code == 201, agent.text
    response = await client.post(
        "/api/v1/eval-runs",
        json={"dataset_id": dataset_id, "agent_id": agent.json()["id"], "tools": REFUND_TOOLS},
    )
    assert_problem(response, 422, pointer="/tools")

    run = await start(client, dataset_id, tools=REFUND_TOOLS)
    case_id = run["test_cases"][0]["test_case_id"]
    for latency in (12.5, "12", -1):
        response = await post(
            client, run["run_id"], [{"test_case_id": case_id, "actual_output": "x",
                                     "latency_ms": latency}],
        )  # fmt: skip
        assert_problem(response, 422, pointer="/results/0/latency_ms")
    turn = {"test_case_id": case_id, "turns": [{"actual_output": "x", "latency_ms": 0.5}]}
    assert_problem(await post(client, run["run_id"], [turn]), 422,
                   pointer="/results/0/turns/0/latency_ms")  # fmt: skip
