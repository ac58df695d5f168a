"""A worker's meter of a project's spend on the server's key (the simulated user's): read and
shared through Redis at most once a second, never lost on a clean shutdown."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest_asyncio
from redis.asyncio import Redis

from agentlasso.config import Settings
from agentlasso.coordination.server_spend import ServerKeySpend
from agentlasso_workers.simulated_users import SpendMeter


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
