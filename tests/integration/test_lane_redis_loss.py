"""Redis going away in the middle of a chunk's conversations: its pacing goes on unpaced (the
chunk is not lost), an agent's concurrency slot waits for Redis to come back, and
gives up (as a single-turn call does) only when it stays away past REDIS_PATIENCE_S; the
simulated user without its judge slot ends its conversation not graded, saying why."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Iterator

import msgspec
import pytest
import pytest_asyncio
from redis.exceptions import RedisError

from agentlasso import queue
from agentlasso.agents import AgentClient, AgentTarget
from agentlasso.config import Settings
from agentlasso.coordination import agent_limits
from agentlasso.db.pool import create_pool
from agentlasso.domain.conversations import Conversation, ScriptedTurn, SimulatedUser
from agentlasso.domain.test_cases import PinnedCase, TestCaseContent
from agentlasso.judge.model_calls import JudgeSettings
from agentlasso.judge.setup import build_judge
from agentlasso.judge.simulated_user import SimulatedUserPlayer
from agentlasso.services.recording import CaseTrial, RunGrading
from agentlasso_workers import lanes
from agentlasso_workers.conversations import most_calls
from agentlasso_workers.simulated_users import NO_SLOT, SimulatedUsers
from agentlasso_workers.state import WorkerState
from tests.e2e.test_server_recovery import private_redis
from tests.support.conversational_agent import ConversationalAgent, running_conversational_agent
from tests.support.processes import free_port

TURNS = ("Hi, my order 1234 has not arrived.", "Can I get a refund?", "My order number?")


@pytest.fixture
def agent() -> Iterator[ConversationalAgent]:
    with running_conversational_agent() as server:
        yield server


@pytest_asyncio.fixture
async def state(settings: Settings) -> AsyncIterator[tuple[WorkerState, int]]:
    """A worker's state whose Redis is this test's own (the test stops it); its port."""
    port = free_port()
    with private_redis(port) as server:
        connection = await queue.connect(f"redis://127.0.0.1:{port}/0")
        pool = await create_pool(settings.database_url, min_size=1, max_size=2)
        worker = WorkerState(
            settings=settings, pool=pool, redis=connection,
            agent_client=AgentClient.from_settings(settings, max_connections=10),
            secret_key=b"k" * 32, concurrency=10,
        )  # fmt: skip
        server.kill()  # Redis goes away once the lane has its connection
        server.wait()
        try:
            yield worker, port
        finally:
            await worker.agent_client.aclose()
            await pool.close()
            with contextlib.suppress(Exception):
                await connection.aclose()


def plan_and_item(
    agent: ConversationalAgent, agent_limit: int | None
) -> tuple[lanes.RunPlan, CaseTrial]:
    run_id = uuid.uuid4()
    plan = lanes.RunPlan(
        run_id=run_id, project_id=uuid.uuid4(), total=1, case_count=1, chunk_size=1,
        agent_id=uuid.uuid4(), agent_limit=agent_limit,
        target=AgentTarget(url=agent.url, headers={}, timeout_s=10), context={},
        grading=RunGrading(run_id=run_id, judge_configured=False),
    )  # fmt: skip
    content = TestCaseContent(
        conversation=Conversation(turns=tuple(ScriptedTurn(user=text) for text in TURNS))
    )
    case = PinnedCase(
        position=1, test_case_id=uuid.uuid4(), revision_id=uuid.uuid4(), content=content
    )
    return plan, CaseTrial(1, case)


async def test_a_conversation_goes_on_unpaced_when_redis_goes_away(
    state: tuple[WorkerState, int], agent: ConversationalAgent, caplog: pytest.LogCaptureFixture
) -> None:
    worker, _ = state
    plan, item = plan_and_item(agent, agent_limit=None)
    with caplog.at_level(logging.WARNING, "agentlasso.lanes"):
        # The chunk takes every turn's pace at once, as _calls_for does: Redis is away.
        await lanes._pace(worker, plan, most_calls(item))
        reply = await lanes._call(worker, plan, item, attempt=1)
    assert reply.played is not None
    played = reply.played.conversation
    assert played.ended_by == "script"
    assert [turn.error for turn in played.turns] == [None, None, None]
    assert "Your order number is 1234" in str(played.turns[2].actual_output)
    # The chunk's pace went on without Redis; its turns asked the pacer no more.
    assert [r.getMessage() for r in caplog.records].count(
        "agent calls are not paced: Redis did not answer"
    ) == 1


async def test_an_agent_slot_waits_for_redis_to_come_back(
    state: tuple[WorkerState, int], agent: ConversationalAgent, caplog: pytest.LogCaptureFixture
) -> None:
    worker, port = state
    plan, item = plan_and_item(agent, agent_limit=2)
    calling = asyncio.create_task(lanes._call(worker, plan, item, attempt=1))
    await asyncio.sleep(1.0)
    assert not calling.done() and agent.requests == [], "no call is made without a slot"
    with private_redis(port):  # Redis is back, empty (a restart without persistence)
        reply = await asyncio.wait_for(calling, 30)
    assert reply.played is not None
    assert reply.played.conversation.ended_by == "script"
    assert [request["turn"] for request in agent.requests] == [1, 2, 3]
    assert any(
        "Redis did not answer for a concurrency slot" in r.getMessage() for r in caplog.records
    )


async def test_an_agent_slot_gives_up_when_redis_stays_away(
    state: tuple[WorkerState, int], agent: ConversationalAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, _ = state
    monkeypatch.setattr(agent_limits, "REDIS_PATIENCE_S", 1.0)
    plan, item = plan_and_item(agent, agent_limit=2)
    # As for a single-turn case: the call is never made past the agent's max_concurrency; the
    # chunk fails, and the reaper gives it to a worker again.
    with pytest.raises(RedisError):
        await asyncio.wait_for(lanes._call(worker, plan, item, attempt=1), 30)
    assert agent.requests == []


async def test_the_simulated_user_without_its_judge_slot_ends_the_conversation_not_graded(
    state: tuple[WorkerState, int], agent: ConversationalAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, _ = state
    monkeypatch.setattr(agent_limits, "REDIS_PATIENCE_S", 1.0)
    judge = build_judge(worker.settings, worker.pool, worker.limiter, worker.redis)
    users = SimulatedUsers(worker.settings, worker.judge_clients, judge)
    # Never asked: its slot is not to be had. Its address is a closed port all the same.
    player = SimulatedUserPlayer(
        JudgeSettings(api_key="sk-test", model="m", base_url=f"http://127.0.0.1:{free_port()}"),
        {},
    )
    plan, item = plan_and_item(agent, agent_limit=None)
    user = SimulatedUser(persona="A busy parent.", goal="Get order 1234 refunded.")
    conversation = Conversation(turns=(ScriptedTurn(user=TURNS[0]),), simulated_user=user)
    content = TestCaseContent(conversation=conversation)
    item = CaseTrial(
        1,
        PinnedCase(
            position=1, test_case_id=uuid.uuid4(), revision_id=uuid.uuid4(), content=content
        ),
    )
    plan = msgspec.structs.replace(plan, next_user=users._asking(player, plan.project_id))
    try:
        reply = await asyncio.wait_for(lanes._call(worker, plan, item, attempt=1), 30)
    finally:
        await player.aclose()
    assert reply.played is not None
    played = reply.played.conversation
    assert played.ended_by == "simulated_user"
    assert played.not_graded_reason == NO_SLOT
    assert [turn.error for turn in played.turns] == [None]
