"""The agent client speaking each protocol of contract section 14 to real servers on loopback:
an A2A agent built with the A2A SDK, and an OpenAI-compatible endpoint that the official
`openai` client accepts as one."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from openai import AsyncOpenAI

from agentlasso.agent_wire.a2a_card import card_url, parse_card
from agentlasso.agents import AgentCallResult, AgentClient, AgentTarget
from tests.support.a2a_agent import SLOW_S, TOOL_CALLS, RunningA2aAgent, running_a2a_agent
from tests.support.openai_chat_agent import HostileModel, running_openai_endpoint

pytestmark = pytest.mark.usefixtures("loopback_only")

TOOLS = [
    {
        "name": "lookup_order",
        "description": "Find an order by its number.",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    }
]


def body(text: str, **more: Any) -> dict[str, Any]:
    return {"input": text, "source": "agentlasso-test", "trial": 1, "context": {}, **more}


@pytest.fixture(scope="module")
def a2a_agent() -> AsyncIterator[RunningA2aAgent]:
    with running_a2a_agent() as agent:
        yield agent  # type: ignore[misc]


@pytest_asyncio.fixture
async def client() -> AsyncIterator[AgentClient]:
    async with AgentClient(max_connections=8, allow_private=True, backoff_base_s=0.01) as client:
        yield client


async def a2a_target(
    client: AgentClient, agent: RunningA2aAgent, timeout_s: float = 10
) -> AgentTarget:
    """The target registration would store: the JSON-RPC endpoint the served card names."""
    card = parse_card(await client.fetch(card_url(agent.base_url), {}, 5))  # type: ignore[arg-type]
    assert not isinstance(card, str), card
    return AgentTarget(card.endpoint, {}, timeout_s, protocol="a2a")


# A2A


async def test_the_sdk_servers_card_is_read_with_its_endpoint_and_skills(
    client: AgentClient, a2a_agent: RunningA2aAgent
) -> None:
    served = await client.fetch(card_url(a2a_agent.base_url), {}, 5)
    assert isinstance(served, bytes), served

    card = parse_card(served)

    assert not isinstance(card, str), card
    assert (card.name, card.endpoint) == ("Refund agent", f"{a2a_agent.base_url}/a2a")
    assert [skill.id for skill in card.skills] == ["refunds"]
    assert card.skills[0].examples == ["Refund order 1234"]


async def test_a_message_reply_is_the_output_with_its_calls_unreported(
    client: AgentClient, a2a_agent: RunningA2aAgent
) -> None:
    result = await client.call(await a2a_target(client, a2a_agent), body("hello there"))

    assert result.error is None, result.error
    assert result.actual_output == "message 1 of this context; before it: None"
    assert result.actual_tool_calls is not None
    assert repr(result.actual_tool_calls) == "UNSET", "no data part reported any call"


async def test_tool_calls_come_from_data_parts(
    client: AgentClient, a2a_agent: RunningA2aAgent
) -> None:
    result = await client.call(await a2a_target(client, a2a_agent), body("tools please"))

    assert result.error is None, result.error
    assert result.actual_tool_calls == TOOL_CALLS


async def test_a_conversation_is_one_context_over_its_turns(
    client: AgentClient, a2a_agent: RunningA2aAgent
) -> None:
    target = await a2a_target(client, a2a_agent)
    conversation_id = str(uuid.uuid4())

    first = await client.call(
        target, body("my order is 4417", conversation_id=conversation_id, turn=1)
    )
    second = await client.call(
        target, body("where is it?", conversation_id=conversation_id, turn=2)
    )
    elsewhere = await client.call(target, body("where is it?"))

    assert first.actual_output == "message 1 of this context; before it: None"
    assert second.actual_output == "message 2 of this context; before it: my order is 4417"
    assert elsewhere.actual_output == "message 1 of this context; before it: None"


async def test_a_task_that_completes_at_once_answers_with_its_artifact(
    client: AgentClient, a2a_agent: RunningA2aAgent
) -> None:
    result = await client.call(await a2a_target(client, a2a_agent), body("task refund 1234"))

    assert result.error is None, result.error
    assert result.actual_output == "done: task refund 1234"
    assert [attempt.status for attempt in result.attempts] == [200]


async def test_a_task_that_takes_a_while_is_followed_to_completion(
    client: AgentClient, a2a_agent: RunningA2aAgent
) -> None:
    started = time.monotonic()

    result = await client.call(await a2a_target(client, a2a_agent), body("slow refund 1234"))

    assert result.error is None, result.error
    assert result.actual_output == "done: slow refund 1234"
    assert time.monotonic() - started >= SLOW_S
    assert len(result.attempts) == 1, "following a task is one attempt, not retries"


async def test_a_task_that_never_completes_fails_at_the_timeout_without_retries(
    client: AgentClient, a2a_agent: RunningA2aAgent
) -> None:
    started = time.monotonic()

    result = await client.call(
        await a2a_target(client, a2a_agent, timeout_s=1.5), body("never finish")
    )

    assert result.error is not None
    assert "A2A task" in result.error and "was still" in result.error
    assert "after 1.5 s" in result.error
    assert len(result.attempts) == 1
    assert time.monotonic() - started < 5


async def test_a_failed_task_says_why(client: AgentClient, a2a_agent: RunningA2aAgent) -> None:
    result = await client.call(await a2a_target(client, a2a_agent), body("fail now"))

    assert result.error == "the agent's A2A task ended failed: the refund service is down"


async def test_tool_fixtures_and_the_case_travel_as_message_metadata(
    client: AgentClient, a2a_agent: RunningA2aAgent
) -> None:
    fixtures = {"orders.lookup": [{"arguments": {"order": 1234}, "result": {"status": "paid"}}]}
    case_id = str(uuid.uuid4())

    result = await client.call(
        await a2a_target(client, a2a_agent),
        body("fixtures please", tool_fixtures=fixtures, test_case_id=case_id),
    )

    assert result.error is None, result.error
    assert json.loads(str(result.actual_output)) == fixtures
    metadata = a2a_agent.executor.metadata[-1]
    assert (metadata["test_case_id"], metadata["source"]) == (case_id, "agentlasso-test")


async def test_a_card_whose_endpoint_points_elsewhere_is_refused_without_connecting(
    loopback_only: list[Any],
) -> None:
    with running_a2a_agent(endpoint="http://169.254.169.254/a2a") as agent:
        async with AgentClient(max_connections=2, allow_private=True) as local:
            card = parse_card(await local.fetch(card_url(agent.base_url), {}, 5))  # type: ignore[arg-type]
        async with AgentClient(max_connections=2, allow_private=False) as guarded:
            result = await guarded.call(
                AgentTarget(card.endpoint, {}, 2, protocol="a2a"), body("hi")
            )  # type: ignore[union-attr]
            fetched = await guarded.fetch(card_url(agent.base_url), {}, 5)

    assert not isinstance(card, str) and card.endpoint == "http://169.254.169.254/a2a"
    assert result.error is not None and "metadata" in result.error, result.error
    assert isinstance(fetched, str) and "loopback" in fetched, fetched
    assert loopback_only == [], "nothing was sent to the address the card named"


# OpenAI-compatible chat completions


@pytest_asyncio.fixture
async def openai_endpoint() -> AsyncIterator[tuple[str, HostileModel]]:
    async with running_openai_endpoint() as endpoint:
        yield endpoint


def openai_target(base_url: str, **more: Any) -> AgentTarget:
    return AgentTarget(
        f"{base_url}/chat/completions", {}, 10, protocol="openai_chat", model="scripted-model",
        system_prompt="You are the shop's support agent.", tools=tuple(TOOLS), **more,
    )  # fmt: skip


async def test_the_official_openai_client_accepts_the_endpoint(
    openai_endpoint: tuple[str, HostileModel],
) -> None:
    base_url, _ = openai_endpoint
    openai = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)

    completion = await openai.chat.completions.create(
        model="scripted-model",
        messages=[{"role": "user", "content": "Where is order 4417?"}],
        tools=[{"type": "function", "function": {"name": "lookup_order", "parameters": {}}}],
    )

    [call] = completion.choices[0].message.tool_calls or []
    assert call.function.name == "lookup_order"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"order_id": "4417"}  # type: ignore[union-attr]
    await openai.close()


async def test_a_turn_is_one_chat_completion_with_the_prompt_context_and_tools(
    client: AgentClient, openai_endpoint: tuple[str, HostileModel]
) -> None:
    base_url, model = openai_endpoint

    result = await client.call(
        openai_target(base_url), body("Where is order 4417?", context={"plan": "gold"})
    )

    assert result.error is None, result.error
    assert result.actual_output == ""
    assert result.actual_tool_calls == [{"name": "lookup_order", "arguments": {"order_id": "4417"}}]
    [sent] = model.requests
    assert sent["model"] == "scripted-model"
    assert [m["role"] for m in sent["messages"]] == ["system", "system", "user"]
    assert sent["messages"][0]["content"] == "You are the shop's support agent."
    assert json.loads(sent["messages"][1]["content"].split(": ", 1)[1]) == {"plan": "gold"}
    assert sent["tools"][0]["function"]["name"] == "lookup_order"
    assert sent["tools"][0]["function"]["parameters"] == TOOLS[0]["input_schema"]
    assert "tool_fixtures" not in json.dumps(sent)


async def test_a_later_turn_sends_the_history_as_messages(
    client: AgentClient, openai_endpoint: tuple[str, HostileModel]
) -> None:
    base_url, model = openai_endpoint
    history = [
        {"role": "user", "content": "My order is 4417."},
        {"role": "assistant", "content": "Thanks.", "tool_calls": [{"name": "lookup_order"}]},
    ]

    result = await client.call(
        openai_target(base_url),
        body("What is my order number?", messages=history, tool_fixtures={"x": []}),
    )

    assert result.actual_output == "Your order number is 4417."
    assert result.actual_tool_calls == [], "an answer without tool_calls called nothing"
    sent = model.requests[-1]["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "My order is 4417."),
        ("assistant", "Thanks."),
        ("user", "What is my order number?"),
    ]


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ("error", "the agent's answer is an error (overloaded): The model is overloaded."),
        ("no choices", "the agent's answer is a chat completion with no choices"),
    ],
)
async def test_an_endpoint_answering_no_completion_says_so(
    client: AgentClient, openai_endpoint: tuple[str, HostileModel], message: str, error: str
) -> None:
    result = await client.call(openai_target(openai_endpoint[0]), body(message))

    assert result.error == error


async def test_ten_thousand_choices_take_the_first(
    client: AgentClient, openai_endpoint: tuple[str, HostileModel]
) -> None:
    result = await client.call(openai_target(openai_endpoint[0]), body("many choices"))

    assert result.error is None, result.error
    assert result.actual_output == "first"


async def test_a_100_mb_tool_argument_is_refused_at_the_body_cap(
    client: AgentClient, openai_endpoint: tuple[str, HostileModel]
) -> None:
    result: AgentCallResult = await client.call(
        openai_target(openai_endpoint[0]), body("huge argument")
    )

    assert result.error is not None
    assert "1 MiB" in result.error or "larger than" in result.error
