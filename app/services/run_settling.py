"""Settling a run once its stores have moved it on, by whoever reads it so first.

The store that completes a run cannot settle it in its own transaction (it never takes the
run's row lock, and another store may be committing beside it), so a run is settled after the
commits: by each lane when its work ends, after each judge chunk, by the reaper's round (a
worker that died between the two), and by an API reader that finds it due. Settling is
idempotent under the run's row lock, so any of them may race; a reader never answers with a run
whose results are all in but whose status and gate are not decided yet.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from agentlasso.db import run_gates
from agentlasso.db import runs as run_rows
from agentlasso.db.pool import Connection
from agentlasso.domain.runs import Run
from agentlasso.observability import metrics


async def settle_if_due(pool: asyncpg.Pool, run: Run) -> Run:
    """The run as read, or settled first when its settling is due."""
    if not run_rows.settle_due(run):
        return run
    async with pool.acquire() as connection, connection.transaction():
        settled = await settle_and_announce(connection, run.id)
    return settled or run


async def settle_run(pool: asyncpg.Pool, run_id: UUID) -> Run | None:
    """Read the run, and settle it when that is due; None when it is gone."""
    run = await run_rows.run_by_id(pool, run_id)
    return None if run is None else await settle_if_due(pool, run)


async def settle_and_announce(connection: Connection, run_id: UUID) -> Run | None:
    """Settle the run in this transaction and tell its waiters (when it commits)."""
    settled = await run_gates.settle(connection, run_id)
    if settled is None:
        return None
    run, ended = settled
    if ended:
        metrics.RUNS_FINISHED.labels(run.status).inc()
    await run_rows.notify(connection, run_id, "final" if run.is_final else "progress")
    return run


async def settle_due_runs(pool: asyncpg.Pool) -> int:
    """Settle every run whose settling is due (the reaper's round); how many."""
    due = await run_rows.runs_to_settle(pool)
    for run_id in due:
        await settle_run(pool, run_id)
    return len(due)
