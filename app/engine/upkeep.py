"""A worker's background duties: heartbeats, noticing cancelled runs, reaping lost chunks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from app import queue
from app.db import chunks as chunk_rows
from app.db import runs as run_rows
from app.db.pool import Connection
from app.domain.runs import ChunkRef
from app.engine.worker_state import WorkerState

log = logging.getLogger("agentlasso.upkeep")

CANCEL_CHECK_S = 0.5
# Tries of one chunk before its run is failed (a crash that recurs is not a dead worker).
MAX_CHUNK_ATTEMPTS = 5
# Any fixed number: one worker at a time reaps, the others skip that round.
_REAPER_LOCK = 7_346_221_002


async def every(interval_s: float, duty: Callable[[], Awaitable[None]]) -> None:
    """Run a duty forever at an interval; a failing round is logged, never fatal."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            await duty()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("worker upkeep failed; trying again in %.1f s", interval_s)


async def send_heartbeat(state: WorkerState) -> None:
    """Tell the reaper this worker's chunks are alive."""
    held = sorted(state.held)
    if held:
        await chunk_rows.heartbeat(state.pool, state.worker_id, held)


async def watch_cancellations(state: WorkerState) -> None:
    """Stop work on runs that were cancelled or failed, within a second."""
    runs = state.held_runs()
    if runs:
        for run_id, status in (await run_rows.statuses(state.pool, runs)).items():
            if status in ("cancelled", "failed"):
                state.cancelled(run_id).set()
    state.forget_idle_runs()


async def reap(state: WorkerState, stale_after_s: float, lost_after_s: float) -> None:
    """Put chunks of dead workers and lost jobs back on the queue (one worker per round)."""
    async with state.pool.acquire() as connection, connection.transaction():
        if not await connection.fetchval("SELECT pg_try_advisory_xact_lock($1)", _REAPER_LOCK):
            return
        for run_id in await chunk_rows.fail_poisoned(connection, stale_after_s, MAX_CHUNK_ATTEMPTS):
            log.error("run %s failed: a chunk died %d times", run_id, MAX_CHUNK_ATTEMPTS)
            await run_rows.notify(connection, run_id, "final")
        reissued = await chunk_rows.requeue_stale(connection, stale_after_s, MAX_CHUNK_ATTEMPTS)
        reissued += await _lost_jobs(state, connection, lost_after_s)
    if reissued:
        log.warning("re-queued %d chunk(s) of dead workers or lost jobs", len(reissued))
        await queue.enqueue_lanes(state.redis, state.settings.queue_name, reissued)


async def _lost_jobs(
    state: WorkerState, connection: Connection, lost_after_s: float
) -> list[ChunkRef]:
    """Queued chunks whose job Redis no longer has (a restart without persistence), re-issued."""
    queued = await chunk_rows.queued_before(connection, lost_after_s)
    by_job = {chunk.job_id: chunk for chunk in queued}
    missing = await queue.missing_jobs(state.redis, list(by_job))
    reissued = []
    for job_id in missing:
        again = await chunk_rows.reissue(connection, by_job[job_id])
        if again is not None:
            reissued.append(again)
    return reissued
