"""The OpenAI Agents SDK partner (tests/support/agents_sdk_agent.py) speaks AgentLasso's turn
protocol over HTTP: it keeps each conversation in the SDK's session by `conversation_id`, and
reports the calls its function tool made in the turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.support.agents_sdk_agent import running_sdk_agent

OPENING = "Hi, where is my order 4417?"
THANKS = "Great, thank you."
RECALL = "What was my order number again?"


def body(
    text: str, conversation_id: str, turn: int, messages: list[dict[str, Any]]
) -> dict[str, Any]:
    """A turn as the platform sends it (contract section 13)."""
    return {
        "input": text,
        "source": "agentlasso-test",
        "test_case_id": "5b0c3f0e-0000-4000-8000-000000000001",
        "run_id": "5b0c3f0e-0000-4000-8000-000000000002",
        "trial": 1,
        "context": {},
        "conversation_id": conversation_id,
        "turn": turn,
        "messages": messages,
    }


async def converse(
    http: httpx.AsyncClient, url: str, conversation_id: str, users: list[str]
) -> list[dict[str, Any]]:
    """The turns of one conversation, each sent with the history before it; the answers."""
    messages: list[dict[str, Any]] = []
    answers = []
    for turn, text in enumerate(users, start=1):
        response = await http.post(url, json=body(text, conversation_id, turn, messages))
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        answers.append(answer)
        messages += [
            {"role": "user", "content": text},
            {"role": "assistant", "content": answer["output"], "tool_calls": answer["tool_calls"]},
        ]
    return answers


async def test_the_agent_keeps_its_session_by_conversation_id_and_reports_its_tool_calls(
    tmp_path: Path,
) -> None:
    async with (
        running_sdk_agent(tmp_path) as (url, agent, model),
        httpx.AsyncClient(timeout=30) as http,
    ):
        first, second, third = await converse(http, url, "conv-a", [OPENING, THANKS, RECALL])
        assert first["tool_calls"] == [
            {"name": "lookup_order", "arguments": {"order_id": "4417"},
             "result": "Order 4417 is shipped on Monday, arriving Friday."},
        ]  # fmt: skip
        assert first["output"] == "Order 4417 is shipped on Monday, arriving Friday. Anything else?"
        assert second["tool_calls"] == [], "no call in this turn: reported as none"
        assert second["output"] == "Glad to help. Is there anything else?"
        assert third["output"] == "Your order number is 4417.", "remembered from turn 1"
        assert third["tool_calls"] == []

        # What the model was sent at turn 3 came from the SDK's session: turn 1 included.
        sent = [message.get("content") for message in model.requests[-1]["messages"]]
        assert OPENING in sent and sent[-1] == RECALL
        stored = await agent.session_for("conv-a").get_items()
        assert any(item.get("content") == OPENING for item in stored)

        (fresh,) = await converse(http, url, "conv-b", [RECALL])
        assert fresh["output"] == "I don't know your order number yet: what is it?"
        assert fresh["tool_calls"] == []
        assert OPENING not in [m.get("content") for m in model.requests[-1]["messages"]]

        # The first conversation is still kept, its turn 4 after the other conversation's.
        fourth = await http.post(url, json=body(RECALL, "conv-a", 4, []))
        assert fourth.json()["output"] == "Your order number is 4417."
