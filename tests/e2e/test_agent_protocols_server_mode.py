"""Server mode with every protocol of contract section 14, through real worker processes: an
A2A agent built with the A2A SDK and an OpenAI-compatible endpoint, registered through the API
(which checks each endpoint first), run as the platform runs any agent."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import msgspec
import pytest
import pytest_asyncio

from tests.support.a2a_agent import RunningA2aAgent, running_a2a_agent
from tests.support.api import all_results, create_dataset, start_run, wait_final
from tests.support.assertions import assert_problem
from tests.support.openai_chat_agent import HostileModel, running_openai_endpoint
from tests.support.processes import WorkerProcesses

TRACE_ID = re.compile(r"[0-9a-f]{32}")
A2A_CASES = [
    {"input": "tools refund 1234",
     "checks": [{"id": "t1", "type": "tool_called", "tool": "orders.lookup"}]},
    {"input": "slow refund 1234",
     "checks": [{"id": "s1", "type": "output_contains", "value": "done: slow refund 1234"}]},
    {"conversation": {"turns": [
        {"user": "my order is 4417"},
        {"user": "where is it?", "checks": [
            {"id": "m1", "type": "output_contains", "value": "before it: my order is 4417"}]},
    ]}},
]  # fmt: skip


@pytest.fixture(scope="module")
def a2a_agent() -> Iterator[RunningA2aAgent]:
    with running_a2a_agent() as agent:
        yield agent


@pytest_asyncio.fixture
async def openai_endpoint() -> AsyncIterator[tuple[str, HostileModel]]:
    async with running_openai_endpoint() as endpoint:
        yield endpoint


async def dataset_with(client: httpx.AsyncClient, cases: list[dict[str, Any]]) -> str:
    dataset = await create_dataset(client)
    lines = b"".join(msgspec.json.encode(case) + b"\n" for case in cases)
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines,
        headers={"content-type": "application/x-ndjson"},
    )
    assert response.status_code == 201, response.text
    return str(dataset["id"])


async def registered(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    response = await client.post("/api/v1/agents", json={"name": "deployed agent", **fields})
    assert response.status_code == 201, response.text
    agent: dict[str, Any] = response.json()
    return agent


async def test_an_a2a_agent_is_registered_from_its_card_and_run_like_any_other(
    client: httpx.AsyncClient, a2a_agent: RunningA2aAgent, workers: WorkerProcesses
) -> None:
    workers.start()
    agent = await registered(client, url=a2a_agent.base_url, protocol="a2a")
    assert agent["protocol"] == "a2a"
    assert agent["a2a_card"]["endpoint"] == f"{a2a_agent.base_url}/a2a"
    assert [skill["name"] for skill in agent["a2a_card"]["skills"]] == ["Refunds"]

    dataset_id = await dataset_with(client, A2A_CASES)
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent["id"])
    final = await wait_final(client, run["run_id"])

    assert final["status"] == "completed" and final["ci_pass"] is True, final
    results = await all_results(client, run["run_id"])
    single = [result for result in results if "turns" not in result]
    [conversation] = [result for result in results if "turns" in result]
    assert all(TRACE_ID.fullmatch(result["agent_trace_id"]) for result in single)
    assert [turn["actual_output"] for turn in conversation["turns"]] == [
        "message 1 of this context; before it: None",
        "message 2 of this context; before it: my order is 4417",
    ]
    turn_traces = [turn["agent_trace_id"] for turn in conversation["turns"]]
    assert all(TRACE_ID.fullmatch(trace) for trace in turn_traces) and len(set(turn_traces)) == 2


async def test_an_openai_compatible_endpoint_is_checked_then_run(
    client: httpx.AsyncClient, openai_endpoint: tuple[str, HostileModel], workers: WorkerProcesses
) -> None:
    workers.start()
    base_url, model = openai_endpoint
    url = f"{base_url}/chat/completions"
    tools = [{"name": "lookup_order", "input_schema": {"type": "object"}}]
    missing_model = await client.post(
        "/api/v1/agents", json={"name": "x", "url": url, "protocol": "openai_chat"}
    )
    assert_problem(missing_model, 422, pointer="/model")
    agent = await registered(
        client, url=url, protocol="openai_chat", model="scripted-model", tools=tools,
        system_prompt="You are the shop's support agent.",
    )  # fmt: skip
    assert model.requests, "registration asked the endpoint for a completion"

    cases = [{"input": "Where is order 4417?",
              "checks": [{"id": "l1", "type": "tool_called", "tool": "lookup_order",
                          "arguments": {"order_id": "4417"}}]}]  # fmt: skip
    run = await start_run(
        client, dataset_id=await dataset_with(client, cases), agent_id=agent["id"]
    )
    final = await wait_final(client, run["run_id"])

    assert final["status"] == "completed" and final["ci_pass"] is True, final
    sent = model.requests[-1]
    assert sent["messages"][0] == {"role": "system", "content": "You are the shop's support agent."}
    assert sent["tools"][0]["function"]["name"] == "lookup_order"


async def test_registration_says_in_words_when_the_endpoint_speaks_another_protocol(
    client: httpx.AsyncClient, a2a_agent: RunningA2aAgent, openai_endpoint: tuple[str, HostileModel]
) -> None:
    base_url, _ = openai_endpoint
    not_a_card = await client.post(
        "/api/v1/agents", json={"name": "x", "url": base_url, "protocol": "a2a"}
    )
    not_a_chat = await client.post(
        "/api/v1/agents",
        json={"name": "x", "url": f"{a2a_agent.base_url}/a2a", "protocol": "openai_chat",
              "model": "m"},
    )  # fmt: skip

    problem = assert_problem(not_a_card, 422, pointer="/url")
    assert "agent card" in str(problem) and "could not be read" in str(problem)
    problem = assert_problem(not_a_chat, 422, pointer="/url")
    assert "did not answer a chat completion" in str(problem)
    assert (await client.get("/api/v1/agents")).json()["items"] == [], "nothing was stored"


async def test_invoke_speaks_the_agents_protocol_and_names_its_trace(
    client: httpx.AsyncClient, a2a_agent: RunningA2aAgent
) -> None:
    agent = await registered(client, url=a2a_agent.base_url, protocol="a2a")

    response = await client.post(
        f"/api/v1/agents/{agent['id']}/invoke", json={"input": "task refund 99"}
    )

    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["output"] == "done: task refund 99" and answer["error"] is None
    assert TRACE_ID.fullmatch(answer["agent_trace_id"])


async def test_switching_an_agent_to_a2a_reads_its_card(
    client: httpx.AsyncClient, a2a_agent: RunningA2aAgent
) -> None:
    agent = await registered(client, url=a2a_agent.base_url)
    assert agent["protocol"] == "agentlasso" and agent["a2a_card"] is None

    response = await client.patch(f"/api/v1/agents/{agent['id']}", json={"protocol": "a2a"})

    assert response.status_code == 200, response.text
    assert response.json()["a2a_card"]["name"] == "Refund agent"
