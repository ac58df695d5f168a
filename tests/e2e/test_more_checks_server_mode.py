"""The checks of contract section 17 in server mode, with real worker processes calling a fake
agent: the latency the platform measured, tool arguments against the input schemas of the
agent's declared tools (as they were when the run started), counts of calls, a JSON reply's
shape."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.api import all_results, create_dataset, register_agent, start_run, wait_final
from tests.support.conversational_agent import running_conversational_agent
from tests.support.processes import WorkerProcesses
from tests.support.tool_agent import Scripted, ToolAgent, running_tool_agent

REFUND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["order", "amount"],
    "properties": {
        "order": {"type": "string", "pattern": "^A-[0-9]+$"},
        "amount": {"type": "integer", "minimum": 1, "maximum": 100},
    },
    "additionalProperties": False,
}
TOOLS = [
    {"name": "orders.lookup", "input_schema": {"type": "object", "required": ["order"]}},
    {"name": "stripe.refund", "description": "Refund an order", "input_schema": REFUND_SCHEMA},
]
ORDER_REPLY = {
    "type": "object",
    "title": "Refund receipt",
    "required": ["order_id", "refund"],
    "properties": {"order_id": {"type": "string"}, "refund": {"type": "boolean"}},
}
LOOKUP = {"name": "orders.lookup", "arguments": {"order": "A-17"}}
# The allowed latency, and how long the slow answer takes: well past it, so a loaded machine
# cannot make the slow answer pass, and far above a fast answer's few milliseconds.
ALLOWED_MS = 3000
SLOW_S = 3.5


def refund(**arguments: Any) -> dict[str, Any]:
    """A call of stripe.refund in OpenAI's shape, its arguments a JSON string."""
    return {"function": {"name": "stripe.refund", "arguments": json.dumps(arguments)}}


RECEIPT = json.dumps({"order_id": "A-17", "refund": True})
REPLIES = {
    "fast": Scripted(RECEIPT, [LOOKUP, refund(order="A-17", amount=42)]),
    "slow": Scripted(RECEIPT, [LOOKUP, refund(order="A-17", amount=42)], delay_s=SLOW_S),
    "careless": Scripted(
        json.dumps({"order_id": 17}),
        [LOOKUP, LOOKUP, refund(order="A-17", amount=-5, note="sorry")],
    ),
    "too much": Scripted("Refunded.", [refund(order="A-17", amount=500)]),
}
CHECKS: list[dict[str, Any]] = [
    {"id": "quick", "type": "latency_below", "ms": ALLOWED_MS},
    {"id": "args", "type": "tool_args_valid"},
    {"id": "calls", "type": "max_tool_calls", "count": 2},
    {"id": "shape", "type": "output_matches_schema", "schema": ORDER_REPLY},
    {"id": "refund", "type": "tool_called", "tool": "stripe.refund", "arguments": {"amount": 42}},
]


@pytest.fixture
def tool_agent() -> Iterator[ToolAgent]:
    with running_tool_agent(REPLIES) as agent:
        yield agent


async def dataset_with(client: httpx.AsyncClient, cases: dict[str, list[dict[str, Any]]]) -> str:
    dataset = await create_dataset(client, name="more checks, server mode")
    for text, checks in cases.items():
        body = {"input": text, "checks": checks}
        response = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=body)
        assert response.status_code == 201, response.text
    return str(dataset["id"])


async def results_by_input(client: httpx.AsyncClient, run_id: str) -> dict[str, dict[str, Any]]:
    """The run's stored results, by their case's input."""
    results = await all_results(client, run_id)
    inputs = {}
    for result in results:
        case = await client.get(f"/api/v1/test-cases/{result['test_case_id']}")
        inputs[result["test_case_id"]] = case.json()["input"]
    return {inputs[result["test_case_id"]]: result for result in results}


def checks_of(result: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["id"]: (c["status"], c["detail"]) for c in result["check_results"]}


async def test_the_platform_grades_latency_arguments_calls_and_shape_of_each_answer(
    client: httpx.AsyncClient, tool_agent: ToolAgent, workers: WorkerProcesses
) -> None:
    workers.start()
    agent_id = await register_agent(client, tool_agent.url, tools=TOOLS)
    dataset_id = await dataset_with(client, {"fast": CHECKS, "slow": CHECKS, "careless": CHECKS})
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=3)
    final = await wait_final(client, run["run_id"])
    assert final["status"] == "completed", final
    results = await results_by_input(client, run["run_id"])

    fast = results["fast"]
    measured = fast["agent_call"]["latency_ms"]
    assert measured < ALLOWED_MS
    assert checks_of(fast) == {
        "quick": ("passed", f"The agent answered in {measured:,} ms, within the 3,000 ms allowed."),
        "args": ("passed", "All 2 tool calls had valid arguments."),
        "calls": ("passed", "The agent made 2 tool calls; at most 2 allowed."),
        "shape": ("passed", "The reply matches the schema."),
        "refund": ("passed", "stripe.refund was called with the expected arguments."),
    }
    assert fast["pass_fail"] is True

    slow = results["slow"]
    took = slow["agent_call"]["latency_ms"]
    assert took >= SLOW_S * 1000, "the platform measured the call it made"
    status, detail = checks_of(slow)["quick"]
    assert status == "failed"
    assert detail == f"The agent answered in {took:,} ms, over the 3,000 ms allowed."
    assert [status for status, _ in checks_of(slow).values()] == ["failed"] + ["passed"] * 4
    assert slow["pass_fail"] is False

    careless = checks_of(results["careless"])
    assert careless["quick"][0] == "passed"
    assert careless["args"] == (
        "failed",
        "stripe.refund was called with arguments that are not valid: "
        "$.amount: -5 is less than the minimum 1.",
    )
    assert careless["calls"] == (
        "failed",
        "The agent made 3 tool calls; at most 2 allowed. "
        "The agent called: orders.lookup, orders.lookup, stripe.refund.",
    )
    assert careless["shape"] == (
        "failed",
        'The reply does not match the schema: $: the required property "refund" is missing.',
    )
    assert careless["refund"] == ("failed", "stripe.refund was called with amount -5; expected 42.")
    assert final["counts"]["passed"] == 1 and final["counts"]["failed"] == 2
    assert final["ci_pass"] is False


async def test_a_run_grades_tool_arguments_by_the_tools_it_started_with(
    client: httpx.AsyncClient, tool_agent: ToolAgent, workers: WorkerProcesses
) -> None:
    agent_id = await register_agent(client, tool_agent.url, tools=TOOLS)
    dataset_id = await dataset_with(client, {"too much": [{"type": "tool_args_valid"}]})
    before = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
    # The agent's tools change while the run waits for a worker: its amount has no maximum now.
    looser = {**REFUND_SCHEMA, "properties": {**REFUND_SCHEMA["properties"], "amount": {}}}
    edited = await client.patch(
        f"/api/v1/agents/{agent_id}",
        json={"tools": [TOOLS[0], {"name": "stripe.refund", "input_schema": looser}]},
    )
    assert edited.status_code == 200, edited.text
    workers.start()
    assert (await wait_final(client, before["run_id"]))["status"] == "completed"
    (result,) = await all_results(client, before["run_id"])
    assert checks_of(result)["c1"] == (
        "failed",
        "stripe.refund was called with arguments that are not valid: "
        "$.amount: 500 is greater than the maximum 100.",
    )

    # A run started after the edit grades by the tools as they are now.
    after = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
    assert (await wait_final(client, after["run_id"]))["ci_pass"] is True
    (result,) = await all_results(client, after["run_id"])
    assert checks_of(result)["c1"] == ("passed", "The tool call had valid arguments.")

    # An agent that declares no tools leaves the check ungraded, never passed unchecked.
    cleared = await client.patch(f"/api/v1/agents/{agent_id}", json={"tools": None})
    assert cleared.status_code == 200, cleared.text
    none = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
    final = await wait_final(client, none["run_id"])
    (result,) = await all_results(client, none["run_id"])
    status, detail = checks_of(result)["c1"]
    assert status == "not_graded" and re.match("The agent declares no tools", detail)
    assert final["ci_pass"] is False and result["partially_graded"] is True


async def test_a_conversation_is_timed_turn_by_turn_and_in_total(
    client: httpx.AsyncClient, workers: WorkerProcesses
) -> None:
    workers.start()
    conversation = {
        "turns": [
            {"user": "Hi, my order 1234 has not arrived."},
            {"user": "Can I get a refund?", "checks": [{"id": "turn", "type": "latency_below",
                                                         "ms": ALLOWED_MS}]},
            {"user": "Thanks"},
        ]
    }  # fmt: skip
    checks = [
        {"id": "each", "type": "latency_below", "ms": ALLOWED_MS},
        # Three turns of at least 0.4 s each cannot take under 1 s together.
        {"id": "all", "type": "latency_below", "ms": 1000, "total": True},
        {"id": "refund", "type": "tool_called", "tool": "stripe.refund",
         "arguments": {"order": "1234"}},
    ]  # fmt: skip
    dataset = await create_dataset(client, name="timed conversation")
    body = {"conversation": conversation, "checks": checks}
    created = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=body)
    assert created.status_code == 201, created.text
    with running_conversational_agent() as agent:
        agent.delay_s = 0.4
        agent_id = await register_agent(client, agent.url)
        run = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id)
        final = await wait_final(client, run["run_id"])
    assert final["status"] == "completed", final
    (result,) = await all_results(client, run["run_id"])
    took = [turn["latency_ms"] for turn in result["turns"]]
    assert all(ms >= 400 for ms in took), took
    verdicts = checks_of(result)
    assert verdicts["turn"] == (
        "passed",
        f"The agent answered in {took[1]:,} ms, within the 3,000 ms allowed.",
    )
    assert verdicts["each"] == (
        "passed",
        f"Every turn answered within the 3,000 ms allowed (the slowest took {max(took):,} ms).",
    )
    assert verdicts["all"] == (
        "failed",
        f"The 3 turns took {sum(took):,} ms in all, over the 1,000 ms allowed.",
    )
    assert verdicts["refund"] == ("passed", "stripe.refund was called with the expected arguments.")
    assert result["pass_fail"] is False
