"""The run envelope (contract section 14): every call to an agent carries a W3C `traceparent`,
and the call's result keeps its trace id."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

from agentlasso.agents import AgentCallResult, AgentClient, AgentTarget
from tests.support.agent_servers import Handler, ScriptedAgent, hang, json_answer

REPLY = {"output": "Refunded.", "tool_calls": []}
BODY = {"input": "refund order 1234", "source": "agentlasso-test", "trial": 1, "context": {}}
# version 00, a 32-hex trace id, a 16-hex parent span id, sampled (W3C Trace Context).
TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-01")
StartAgent = Callable[..., Awaitable[ScriptedAgent]]

pytestmark = pytest.mark.usefixtures("loopback_only")


@pytest_asyncio.fixture
async def start_agent() -> AsyncIterator[StartAgent]:
    agents: list[ScriptedAgent] = []

    async def start(*handlers: Handler) -> ScriptedAgent:
        agent = await ScriptedAgent(handlers).start()
        agents.append(agent)
        return agent

    yield start
    for agent in agents:
        await agent.close()


async def call(
    url: str, headers: dict[str, str] | None = None, **options: float
) -> AgentCallResult:
    async with AgentClient(max_connections=4, allow_private=True, backoff_base_s=0.01) as client:
        return await client.call(AgentTarget(url, headers or {}, options.get("timeout", 5.0)), BODY)


async def test_every_call_carries_a_traceparent_whose_trace_id_the_result_keeps(
    start_agent: StartAgent,
) -> None:
    agent = await start_agent(json_answer(REPLY), json_answer(REPLY))

    first = await call(agent.url)
    second = await call(agent.url)

    sent = [TRACEPARENT.fullmatch(r.headers["traceparent"]) for r in agent.requests]
    assert all(sent), [r.headers["traceparent"] for r in agent.requests]
    assert [first.agent_trace_id, second.agent_trace_id] == [m.group(1) for m in sent if m]
    assert first.agent_trace_id != second.agent_trace_id, "each call is its own trace"


async def test_the_tries_of_one_call_share_its_trace(start_agent: StartAgent) -> None:
    busy = json_answer({"error": "busy"}, status=503)
    agent = await start_agent(busy, json_answer(REPLY))

    result = await call(agent.url)

    assert result.error is None
    parents = {r.headers["traceparent"] for r in agent.requests}
    assert len(agent.requests) == 2 and len(parents) == 1
    assert parents.pop().split("-")[1] == result.agent_trace_id


async def test_a_failed_call_still_names_the_trace_it_sent(start_agent: StartAgent) -> None:
    agent = await start_agent(hang(), hang(), hang())

    result = await call(agent.url, timeout=0.2)

    assert result.error is not None and "timed out" in result.error
    assert result.agent_trace_id == agent.requests[0].headers["traceparent"].split("-")[1]


async def test_a_stored_traceparent_header_cannot_replace_the_calls_own(
    start_agent: StartAgent,
) -> None:
    agent = await start_agent(json_answer(REPLY))
    forged = "00-" + "1" * 32 + "-" + "2" * 16 + "-01"

    result = await call(agent.url, headers={"Traceparent": forged})

    [request] = agent.requests
    assert request.headers["traceparent"] != forged
    assert request.headers["traceparent"].split("-")[1] == result.agent_trace_id


async def test_a_call_refused_before_sending_carries_no_trace() -> None:
    result = await call("ftp://127.0.0.1/agent")

    assert result.error is not None
    assert result.agent_trace_id is None
