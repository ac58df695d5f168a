"""Worker processes: who is alive, since when, and what they hold."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor


class WorkerRow(msgspec.Struct, frozen=True, kw_only=True):
    """A live worker, with the chunks it holds of one project's runs."""

    id: str
    host: str
    pid: int
    started_at: datetime
    last_heartbeat_at: datetime
    chunks_held: int


_BEAT = """
INSERT INTO workers (id, host, pid, concurrency) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO UPDATE SET last_heartbeat_at = now()
"""

_FORGET = "DELETE FROM workers WHERE id = $1"

_SWEEP = "DELETE FROM workers WHERE last_heartbeat_at < now() - make_interval(secs => $1)"

# Only the caller's project's chunks are counted: a worker's work for others is not theirs to see.
_LIVE = """
SELECT w.id, w.host, w.pid, w.started_at, w.last_heartbeat_at,
       (SELECT count(*) FROM run_chunks c JOIN eval_runs r ON r.id = c.run_id
        WHERE c.worker_id = w.id AND c.state = 'running' AND r.project_id = $1) AS chunks_held
FROM workers w
WHERE w.last_heartbeat_at >= now() - make_interval(secs => $2)
ORDER BY w.started_at, w.id
"""


async def beat(executor: Executor, worker_id: str, host: str, pid: int, concurrency: int) -> None:
    """Say the worker is alive (its row is written the first time)."""
    await executor.execute(_BEAT, worker_id, host, pid, concurrency)


async def forget(executor: Executor, worker_id: str) -> None:
    """A worker stopping removes itself."""
    await executor.execute(_FORGET, worker_id)


async def sweep(executor: Executor, older_than_s: float) -> None:
    """Remove workers that died without saying so."""
    await executor.execute(_SWEEP, older_than_s)


async def live(executor: Executor, project_id: UUID, beat_within_s: float) -> list[WorkerRow]:
    """Workers that beat recently, oldest first, with the project's chunks each holds."""
    rows = await executor.fetch(_LIVE, project_id, beat_within_s)
    return [WorkerRow(**dict(row)) for row in rows]
