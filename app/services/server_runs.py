"""Starting a server-mode run: pin the cases, cut the work into chunks, queue the first lanes."""

from __future__ import annotations

import logging
import math
import uuid
from uuid import UUID

import asyncpg
from arq.connections import ArqRedis

from app import queue
from app.db import agents as agent_rows
from app.db import chunks as chunk_rows
from app.db import runs as run_rows
from app.db.pool import Connection
from app.errors import FieldError, InvalidInput
from app.services.runs import (
    CreatedRun,
    NewRun,
    dataset_to_run,
    replay,
    request_hash,
    store_gate,
)

log = logging.getLogger("agentlasso.runs")

# Items per chunk at most: large enough to amortise a chunk's queries, small enough that a
# worker dying mid-chunk redoes little and that a chunk's slowest call holds up few others.
MAX_CHUNK_SIZE = 50
DEFAULT_CONCURRENCY = 50


def chunking(total: int, concurrency: int) -> tuple[int, int, int]:
    """(chunk size, chunk count, lanes): lanes x chunk size is the run's concurrency."""
    size = max(1, min(MAX_CHUNK_SIZE, concurrency))
    count = math.ceil(total / size)
    lanes = min(count, math.ceil(concurrency / size))
    return size, count, lanes


async def create_server_run(
    pool: asyncpg.Pool,
    redis: ArqRedis,
    queue_name: str,
    project_id: UUID,
    request: NewRun,
    idempotency_key: str | None,
) -> CreatedRun:
    """Create the run and queue its first lanes; the answer does not wait for any agent call."""
    async with pool.acquire() as connection, connection.transaction():
        dataset = await dataset_to_run(connection, project_id, request.dataset_id)
        agent_limit = await _agent_limit(connection, project_id, request.agent_id)
        concurrency = request.concurrency or min(DEFAULT_CONCURRENCY, agent_limit or 10**9)
        values = (
            uuid.uuid4(), project_id, request.dataset_id, "server", "queued",
            request.pass_threshold, request.trials, request.labels, idempotency_key,
            request_hash(request), request.agent_id, concurrency, request.judge_cache,
        )  # fmt: skip
        run = await run_rows.insert_run(connection, values)
        if run is None:
            assert idempotency_key is not None
            return await replay(connection, project_id, idempotency_key, request, dataset)
        run, lanes = await _plan_work(connection, run, request.dataset_id, concurrency)
    await enqueue_quietly(redis, queue_name, lanes)
    return CreatedRun(run=run, data_context=dataset["data_context"], replayed=False)


async def _plan_work(
    connection: Connection, run: asyncpg.Record, dataset_id: UUID, concurrency: int
) -> tuple[asyncpg.Record, list[asyncpg.Record]]:
    run = await run_rows.pin_cases(connection, run["id"], dataset_id)
    size, count, lanes = chunking(run["total"], concurrency)
    await run_rows.set_chunk_size(connection, run["id"], size)
    await chunk_rows.create_chunks(connection, run["id"], count)
    first = await chunk_rows.queue_next(connection, run["id"], lanes)
    if run["total"] == 0:
        run = await store_gate(connection, run)  # nothing to call: complete, and not passed
    refreshed = await run_rows.run_by_id(connection, run["id"])
    assert refreshed is not None
    return refreshed, first


async def enqueue_quietly(redis: ArqRedis, queue_name: str, lanes: list[asyncpg.Record]) -> None:
    """Enqueue chunks already queued in PostgreSQL; if Redis is away, the reaper re-issues them."""
    if not lanes:
        return
    try:
        await queue.enqueue_lanes(
            redis, queue_name, [(row["run_id"], row["chunk_no"], row["job_id"]) for row in lanes]
        )
    except Exception:  # Redis away: the chunks are queued in PostgreSQL; the reaper re-issues
        log.exception("could not enqueue %d chunk(s); the reaper will re-issue them", len(lanes))


async def _agent_limit(
    connection: Connection, project_id: UUID, agent_id: UUID | None
) -> int | None:
    row = None if agent_id is None else await agent_rows.get_agent(connection, project_id, agent_id)
    if row is None:
        detail = "No agent with this id in your project."
        raise InvalidInput(detail, [FieldError(pointer="/agent_id", detail=detail)])
    limit: int | None = row["max_concurrency"]
    return limit
