"""A worker's meter of a project's spend on the server's key (the simulated user's): read and
shared through Redis at most once a second, by the next call or by the worker's duty when it
goes idle, never lost on a clean shutdown."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest_asyncio
from redis.asyncio import Redis

from agentlasso import queue
from agentlasso.agents import AgentClient
from agentlasso.config import Settings
from agentlasso.coordination.server_spend import ServerKeySpend
from agentlasso.db.pool import create_pool
from agentlasso.judge.setup import build_judge
from agentlasso_workers.simulated_users import SimulatedUsers, SpendMeter
from agentlasso_workers.state import WorkerState
from agentlasso_workers.upkeep import share_spend


@pytest_asyncio.fixture
async def spend(settings: Settings) -> AsyncIterator[ServerKeySpend]:
    redis = Redis.from_url(settings.redis_url)
    yield ServerKeySpend(redis, f"agentlasso:test:{uuid.uuid4().hex[:8]}:spend", 1.0)
    await redis.aclose()


async def test_the_meter_shares_its_count_once_a_second_and_on_flush(
    spend: ServerKeySpend,
) -> None:
    project_id = uuid.uuid4()
    clock = [1_000.0]
    meter = SpendMeter(spend, project_id, lambda: clock[0])
    watcher = SpendMeter(spend, project_id, lambda: clock[0])
    assert await meter.spent_reason() is None
    await meter.add(0.6)
    await meter.add(0.6)  # $1.20 spent by this worker, not shared yet
    assert await spend.spent_reason(project_id) is None
    clock[0] += 0.5
    assert await watcher.spent_reason() is None  # read now: nothing shared yet
    clock[0] += 0.5
    await meter.add(0.01)  # a second on: the count is shared
    assert await spend.spent_reason(project_id) is not None
    assert "today's is spent" in (await meter.spent_reason() or "")
    # Another worker's meter read the budget half a second ago: it sees the spend within a
    # second of its last reading, not at once.
    assert await watcher.spent_reason() is None
    clock[0] += 0.5
    assert await watcher.spent_reason() is not None


async def test_a_flush_counts_what_is_left(spend: ServerKeySpend) -> None:
    project_id = uuid.uuid4()
    meter = SpendMeter(spend, project_id, lambda: 5.0)
    await meter.add(1.5)
    assert await spend.spent_reason(project_id) is None
    await meter.flush()  # what a shutdown does: nothing left uncounted
    assert await spend.spent_reason(project_id) is not None


async def test_a_worker_gone_idle_shares_its_spend_from_its_duty(settings: Settings) -> None:
    pool = await create_pool(settings.database_url, min_size=1, max_size=2)
    redis = await queue.connect(settings.redis_url)
    state = WorkerState(
        settings=settings, pool=pool, redis=redis,
        agent_client=AgentClient.from_settings(settings, max_connections=1),
        secret_key=b"k" * 32, concurrency=1,
    )  # fmt: skip
    try:
        state.judge = build_judge(settings, pool, state.limiter, redis)
        server_spend = state.judge.server_spend
        assert server_spend is not None
        state.simulated_users = SimulatedUsers(settings, state.judge_clients, state.judge)
        project_id = uuid.uuid4()
        meter = state.simulated_users.meter(project_id)
        assert meter is not None
        # The worker's last call of the day: past the budget, then nothing more to add it.
        await meter.add(server_spend.budget_usd + 1)
        assert await server_spend.spent_reason(project_id) is None
        await share_spend(state)  # the duty, run every SPEND_EVERY_S
        assert await server_spend.spent_reason(project_id) is not None
        assert meter.unsaved_usd == 0
    finally:
        await state.agent_client.aclose()
        await pool.close()
        await redis.aclose()
