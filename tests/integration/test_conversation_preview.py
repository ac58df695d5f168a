"""Preview in the rubric editor plays a whole conversation against the project's agent (a
conversational agent that keeps state by conversation_id, on loopback) and grades each turn as
a run would; nothing is stored (contract section 13, Web). Playing has PREVIEW_PLAY_S in all:
a slow agent's turn past it fails saying so, the turns before graded."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from agentlasso.config import Settings
from agentlasso.server import create_app
from agentlasso.services import conversation_preview
from tests.support.api import create_dataset, register_agent
from tests.support.conversational_agent import ConversationalAgent, running_conversational_agent
from tests.support.servers import serving
from tests.support.web import browser, shown_text, signed_in_csrf

ORDER_TURNS = {
    "kind": "conversation", "description": "Order over three turns",
    "evaluation_type": "SCORE", "min_confidence": "70",
    "turns-0-user": "Hi, my order 1234 has not arrived.",
    "turns-0-checks-0-type": "tool_called", "turns-0-checks-0-tool": "orders.lookup",
    "turns-1-user": "Can I get a refund?",
    "turns-1-checks-0-type": "tool_called", "turns-1-checks-0-tool": "stripe.refund",
    "turns-2-user": "What was my order number again?",
    "turns-2-checks-0-type": "output_contains", "turns-2-checks-0-value": "1234",
}  # fmt: skip


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    return api_process_url


@pytest.fixture
def agent() -> Iterator[ConversationalAgent]:
    with running_conversational_agent() as server:
        yield server


@pytest_asyncio.fixture
async def signed_in(base_url: str, api_key: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    async with browser(base_url) as web:
        yield web, await signed_in_csrf(web, api_key)


async def test_preview_plays_the_conversation_and_names_the_failing_turn(
    signed_in: tuple[httpx.AsyncClient, str],
    client: httpx.AsyncClient,
    agent: ConversationalAgent,
) -> None:
    web, csrf = signed_in
    await register_agent(client, agent.url)
    dataset = await create_dataset(client)
    new = f"/datasets/{dataset['id']}/cases/new"
    passed = await web.post(new, data={"csrf_token": csrf, **ORDER_TURNS, "action": "preview"})
    assert passed.status_code == 200, passed.text
    shown = shown_text(passed.text)
    assert "Preview: passed" in shown, shown
    shown = shown[shown.index("Preview: passed") :]
    assert "I found order 1234" in shown and "Your order number is 1234" in shown
    assert "How it ended: The last scripted turn was answered." in shown
    # One conversation, its turns in order, each with the history before it.
    assert [request["turn"] for request in agent.requests] == [1, 2, 3]
    assert len({request["conversation_id"] for request in agent.requests}) == 1
    assert agent.history_mismatches == []

    agent.forget_at_turn_3 = True
    failed = await web.post(new, data={"csrf_token": csrf, **ORDER_TURNS, "action": "preview"})
    shown = shown_text(failed.text)
    assert "Preview: failed" in shown
    shown = shown[shown.index("Preview: failed") :]
    turn_three = shown[shown.index("Turn 3") :]
    assert "something I do not know" in turn_three and "failed" in turn_three
    listed = await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")
    assert listed.json()["items"] == [], "a preview stores nothing"


class StuckAtTurn3(ConversationalAgent):
    """Answers turns 1 and 2 at once; turn 3 not before it is released (the test's end)."""

    def __init__(self) -> None:
        super().__init__()
        self.released = threading.Event()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("turn") == 3:
            self.released.wait(60)
        return super().answer(request)


@pytest.fixture
def stuck_agent() -> Iterator[StuckAtTurn3]:
    server = StuckAtTurn3()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.released.set()
        server.shutdown()
        server.server_close()


@pytest_asyncio.fixture
async def in_process_web(
    settings: Settings, api_key: str
) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """The web app served in this process, so that the test can shorten PREVIEW_PLAY_S."""
    async with serving(create_app(settings)) as url, browser(url) as web:
        yield web, await signed_in_csrf(web, api_key)


async def test_a_preview_past_its_time_fails_the_turn_in_flight_and_grades_the_turns_before(
    in_process_web: tuple[httpx.AsyncClient, str],
    client: httpx.AsyncClient,
    stuck_agent: StuckAtTurn3,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(conversation_preview, "PREVIEW_PLAY_S", 2.0)
    web, csrf = in_process_web
    await register_agent(client, stuck_agent.url)
    dataset = await create_dataset(client)
    new = f"/datasets/{dataset['id']}/cases/new"
    started = time.monotonic()
    answered = await web.post(new, data={"csrf_token": csrf, **ORDER_TURNS, "action": "preview"})
    took_s = time.monotonic() - started
    assert answered.status_code == 200, answered.text
    assert took_s < 30, "the preview answers when its time is up, not when the agent does"
    shown = shown_text(answered.text)
    assert "Preview: failed" in shown, shown
    shown = shown[shown.index("Preview: failed") :]
    # Turns 1 and 2 were answered and are graded on their replies.
    assert "I found order 1234" in shown and "I have refunded order 1234" in shown
    turn_three = shown[shown.index("Turn 3") :]
    assert "the preview's 2 s ran out" in turn_three
    assert "How it ended: An agent call failed, which stopped the conversation." in shown
    assert [request["turn"] for request in stuck_agent.requests] == [1, 2]
