"""What operators ask of the platform: the gauges read at scrape time, and the live workers."""

from __future__ import annotations

from typing import get_args
from uuid import UUID

import asyncpg

from agentlasso import queue
from agentlasso.db import runs as run_rows
from agentlasso.db import traces as trace_rows
from agentlasso.db import workers as worker_rows
from agentlasso.db.workers import WorkerRow
from agentlasso.domain.runs import FINAL_STATUSES, RunStatus
from agentlasso.observability import metrics
from agentlasso.queue import QueueConnection

_ACTIVE_STATUSES = [status for status in get_args(RunStatus) if status not in FINAL_STATUSES]
# A worker beats every few seconds; one not heard from for this long is not listed as live.
LIVE_WITHIN_S = 20.0


async def refresh_queue_gauges(redis: QueueConnection, queue_name: str) -> None:
    """The queue's depth and its oldest job's age, read from Redis now."""
    count, oldest_age_s = await queue.depth(redis, queue_name)
    metrics.QUEUE_DEPTH.labels(queue_name).set(count)
    metrics.QUEUE_OLDEST_AGE.labels(queue_name).set(oldest_age_s)


async def refresh_platform_gauges(
    pool: asyncpg.Pool, redis: QueueConnection, queue_name: str
) -> None:
    """Every gauge that is read from PostgreSQL or Redis rather than counted as it happens."""
    await refresh_queue_gauges(redis, queue_name)
    active = await run_rows.active_by_status(pool)
    for status in _ACTIVE_STATUSES:  # zero too, so a graph drops to zero rather than stopping
        metrics.RUNS_ACTIVE.labels(status).set(active.get(status, 0))
    metrics.TRACE_BATCHES_WAITING.set(await trace_rows.waiting_batches(pool))


async def live_workers(pool: asyncpg.Pool, project_id: UUID) -> list[WorkerRow]:
    """Workers that beat recently, each with how many of this project's chunks it holds."""
    return await worker_rows.live(pool, project_id, LIVE_WITHIN_S)
