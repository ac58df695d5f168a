"""A worker's background duties: heartbeats, noticing cancelled runs, reaping lost chunks,
sharing the simulated user's spend."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from agentlasso import queue
from agentlasso.db import chunks as chunk_rows
from agentlasso.db import run_counts
from agentlasso.db import runs as run_rows
from agentlasso.db import workers as worker_rows
from agentlasso.db.pool import Connection
from agentlasso.domain.runs import ChunkRef, lanes_for
from agentlasso.observability import metrics
from agentlasso.observability.worker_port import Liveness
from agentlasso.services.run_settling import settle_due_runs
from agentlasso_workers.lane_balance import Load, LoadBoard, calls_to_hand_over
from agentlasso_workers.state import WorkerState

log = logging.getLogger("agentlasso.upkeep")

CANCEL_CHECK_S = 0.5
# Tries of one chunk before its run is failed (a crash that recurs is not a dead worker).
MAX_CHUNK_ATTEMPTS = 5
# A worker row not beaten for this long is a worker that died without saying so.
FORGET_WORKERS_AFTER_S = 600.0
# A run with this many tallies has them folded into its row by the reaper's round.
FOLD_AT_TALLIES = 200
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
    """Tell the reaper this worker's chunks are alive, and operators that the worker is."""
    await worker_rows.beat(state.pool, state.worker_id, state.host, state.pid, state.concurrency)
    held = sorted(state.held)
    if held:
        await chunk_rows.heartbeat(state.pool, state.worker_id, held)
    state.last_beat_at = time.monotonic()


async def share_spend(state: WorkerState) -> None:
    """Share what the simulated user spent on the server's key and is not counted yet: a
    worker that goes idle shares it within SPEND_EVERY_S, not only on its next call."""
    if state.simulated_users is not None:
        await state.simulated_users.share_spend()


async def balance_lanes(state: WorkerState, board: LoadBoard) -> None:
    """Publish this worker's load, and decide how much of it to hand to others (less what is
    on its way already)."""
    in_transit = state.calls_in_transit()
    mine = Load(state.worker_id, state.lane_calls + in_transit, state.concurrency)
    due = calls_to_hand_over(mine, await board.exchange(mine))
    state.to_hand_over = max(0, due - in_transit)


def liveness(state: WorkerState, stale_after_s: float) -> Liveness:
    """Alive while heartbeats land: a worker that cannot beat for twice the time after which
    its chunks are taken from it is stuck, and better restarted."""
    age_s = round(time.monotonic() - state.last_beat_at, 3)
    return Liveness(status="ok" if age_s < 2 * stale_after_s else "stale", heartbeat_age_s=age_s)


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
        poisoned = await chunk_rows.fail_poisoned(connection, stale_after_s, MAX_CHUNK_ATTEMPTS)
        # What the failed runs' stores counted goes into their rows as they end.
        await run_counts.fold(connection, poisoned)
        for run_id in poisoned:
            log.error("run %s failed: a chunk died %d times", run_id, MAX_CHUNK_ATTEMPTS)
            metrics.CHUNKS_POISONED.inc()
            metrics.RUNS_FINISHED.labels("failed").inc()
            await run_rows.notify(connection, run_id, "final")
        # Readers sum a run's tallies: a long run's are folded into its row now and then.
        await run_counts.fold_crowded(connection, FOLD_AT_TALLIES)
        judging = await chunk_rows.requeue_stale_judging(
            connection, stale_after_s, MAX_CHUNK_ATTEMPTS
        )
        released = await chunk_rows.release_stale_lanes(
            connection, stale_after_s, MAX_CHUNK_ATTEMPTS
        )
        lost = await _lost_jobs(state, connection, lost_after_s)
        lanes = await _replace_lost_lanes(connection)
        await worker_rows.sweep(connection, FORGET_WORKERS_AFTER_S)
    stale = len(judging) + released
    metrics.CHUNKS_REISSUED.labels("stale_worker").inc(stale)
    metrics.CHUNKS_REISSUED.labels("lost_job").inc(len(lost))
    if stale or lost:
        log.warning("re-issued %d chunk(s) of dead workers or lost jobs", stale + len(lost))
    if lanes:
        log.warning("replaced %d lost lane(s) of runs going on", len(lanes))
    await queue.enqueue_lanes(state.redis, state.settings.queue_name, judging + lost + lanes)
    # A worker that died between a run's last store and its settling left it to this round.
    await settle_due_runs(state.pool)


async def _replace_lost_lanes(connection: Connection) -> list[ChunkRef]:
    """Queue a pending chunk for each lane a run lost (a dead worker's, or one whose claim
    failed): a run never stalls with chunks pending, nor gets more lanes than it should."""
    queued: list[ChunkRef] = []
    for run_id, concurrency, held in await chunk_rows.lanes_held(connection):
        missing = lanes_for(concurrency) - held
        if missing > 0:
            queued += await chunk_rows.queue_next(connection, run_id, missing)
    return queued


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
