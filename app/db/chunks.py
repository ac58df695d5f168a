"""Chunks of a server-mode run: who holds them, and which comes next."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.runs import ChunkRef, ClaimedChunk

_CREATE = """
INSERT INTO run_chunks (run_id, chunk_no)
SELECT $1, chunk_no FROM generate_series(0, $2 - 1) AS chunk_no
"""

# A chunk (aliased c) given out again: its next attempt, under a job id of that attempt's, so a
# job of an earlier attempt can no longer claim it.
_NEXT_ATTEMPT = """attempt = c.attempt + 1, enqueued_at = now(),
    job_id = 'chunk:' || c.run_id || ':' || c.chunk_no || ':' || (c.attempt + 1)"""

# The first pending agent chunks of run $1, locked; SKIP LOCKED lets workers race safely.
_PENDING = """
    SELECT run_id, chunk_no FROM run_chunks
    WHERE run_id = $1 AND state = 'pending' AND kind = 'agent'
    ORDER BY chunk_no
    LIMIT {limit}
    FOR UPDATE SKIP LOCKED
"""

# Hands the next pending chunks of a run to the queue.
_QUEUE_NEXT = f"""
UPDATE run_chunks c SET state = 'queued', {_NEXT_ATTEMPT}
WHERE (c.run_id, c.chunk_no) IN ({_PENDING.format(limit="$2")})
RETURNING c.run_id, c.chunk_no, c.job_id
"""

# A lane's next chunk, queued and claimed in one statement, while its run still calls agents.
# The run's status is read without its row lock: a run cancelled at this moment costs one
# chunk started in vain, which the worker stops within a second (upkeep.watch_cancellations).
_CLAIM_NEXT = f"""
UPDATE run_chunks c SET state = 'running', worker_id = $2, heartbeat_at = now(), {_NEXT_ATTEMPT}
WHERE (c.run_id, c.chunk_no) IN ({_PENDING.format(limit=1)})
  AND EXISTS (SELECT 1 FROM eval_runs r WHERE r.id = $1 AND r.status IN ('queued', 'running'))
RETURNING c.chunk_no, c.job_id, c.attempt
"""

_CLAIM = """
UPDATE run_chunks
SET state = 'running', worker_id = $4, heartbeat_at = now()
WHERE run_id = $1 AND chunk_no = $2 AND job_id = $3 AND state = 'queued'
RETURNING kind, items, attempt
"""

# Judge chunks are numbered below zero so they never collide with the run's agent chunks, from
# a sequence: a counter on the run's row would be one more row every store of the run updates.
_CREATE_JUDGE_CHUNK = """
WITH numbered AS (SELECT -nextval('judge_chunk_numbers')::integer AS chunk_no)
INSERT INTO run_chunks (run_id, chunk_no, kind, items, state, attempt, job_id, enqueued_at)
SELECT $1::uuid, n.chunk_no, 'judge', $2, 'queued', 1,
       'chunk:' || $1::uuid || ':' || n.chunk_no || ':1', now()
FROM numbered n
RETURNING run_id, chunk_no, job_id
"""

_FINISH = """
UPDATE run_chunks SET state = 'done', finished_at = now(), heartbeat_at = NULL
WHERE run_id = $1 AND chunk_no = $2 AND job_id = $3
"""

# A chunk no longer this job's (taken from it as stale) is still its run's: held, its run
# cannot be deleted while the results in hand are stored.
_HOLD = "SELECT true FROM run_chunks WHERE run_id = $1 AND chunk_no = $2 FOR KEY SHARE"

_HAND_BACK = """
UPDATE run_chunks SET state = 'queued', worker_id = NULL, heartbeat_at = NULL
WHERE run_id = $1 AND chunk_no = $2 AND job_id = $3 AND state = 'running'
"""

# A chunk locked now is being stored (done when that commits) or handed back, and is skipped:
# one store waiting on its run's row must not hold up the heartbeat of every other chunk.
_HEARTBEAT = """
UPDATE run_chunks c SET heartbeat_at = now()
WHERE (c.run_id, c.chunk_no) IN (
    SELECT run_id, chunk_no FROM run_chunks
    WHERE worker_id = $1 AND state = 'running'
      AND (run_id, chunk_no) IN (SELECT * FROM unnest($2::uuid[], $3::int[]))
    FOR UPDATE SKIP LOCKED
)
"""

# A worker that stopped beating (SIGKILL, a lost host): its judge chunk goes back to the queue
# under a new job id, so the dead worker's job, if arq ever re-runs it, can no longer claim it.
# Any run that has not ended counts: judge chunks run while a run is awaiting results or
# grading.
_REQUEUE_STALE_JUDGING = f"""
UPDATE run_chunks c
SET state = 'queued', worker_id = NULL, heartbeat_at = NULL, {_NEXT_ATTEMPT}
FROM eval_runs r
WHERE r.id = c.run_id AND r.status NOT IN ('completed', 'cancelled', 'failed')
  AND c.kind = 'judge' AND c.state = 'running'
  AND c.heartbeat_at < now() - make_interval(secs => $1) AND c.attempt < $2
RETURNING c.run_id, c.chunk_no, c.job_id
"""

# A dead worker's agent chunks go back to pending, to be taken by the run's lanes: a lane held
# up to two of them (one being stored, the next one called), and re-queuing both would give
# the run a lane more than its concurrency allows. Lanes lost with them are replaced after
# lanes_held counts them (upkeep._replace_lost_lanes).
_RELEASE_STALE_LANES = """
UPDATE run_chunks c
SET state = 'pending', worker_id = NULL, heartbeat_at = NULL
FROM eval_runs r
WHERE r.id = c.run_id AND r.status NOT IN ('completed', 'cancelled', 'failed')
  AND c.kind = 'agent' AND c.state = 'running'
  AND c.heartbeat_at < now() - make_interval(secs => $1) AND c.attempt < $2
"""

# Runs calling their agent with chunks pending, and the agent chunks each has queued or held.
# A live lane always holds one (it claims its next chunk before the one before is stored), so
# fewer than the run's lanes means lanes were lost: a worker died, or a claim failed.
_LANES_HELD = """
SELECT r.id, r.concurrency,
       (SELECT count(*) FROM run_chunks a
        WHERE a.run_id = r.id AND a.kind = 'agent' AND a.state IN ('queued', 'running')) AS held
FROM eval_runs r
WHERE r.mode = 'server' AND r.status IN ('queued', 'running') AND r.concurrency IS NOT NULL
  AND EXISTS (SELECT 1 FROM run_chunks p WHERE p.run_id = r.id AND p.state = 'pending')
"""

# A chunk that died this many times is not a dead worker's bad luck but a fault that will
# recur: its run fails, saying so, instead of retrying forever.
_FAIL_POISONED = """
UPDATE eval_runs r
SET status = 'failed', ci_pass = false, finished_at = now(), updated_at = now(),
    ci_fail_reason = 'A part of this run failed ' || $2 || ' times in the workers; '
                     'the run was stopped. The worker logs say why.'
WHERE r.status NOT IN ('completed', 'cancelled', 'failed') AND r.id IN (
    SELECT run_id FROM run_chunks
    WHERE state = 'running' AND attempt >= $2
      AND heartbeat_at < now() - make_interval(secs => $1)
)
RETURNING r.id
"""

_QUEUED_BEFORE = """
SELECT c.run_id, c.chunk_no, c.job_id
FROM run_chunks c JOIN eval_runs r ON r.id = c.run_id
WHERE c.state = 'queued' AND c.enqueued_at < now() - make_interval(secs => $1)
  AND r.status NOT IN ('completed', 'cancelled', 'failed')
"""

_REISSUE = f"""
UPDATE run_chunks c SET {_NEXT_ATTEMPT}
WHERE run_id = $1 AND chunk_no = $2 AND job_id = $3 AND state = 'queued'
RETURNING run_id, chunk_no, job_id
"""


def _ref(row: asyncpg.Record) -> ChunkRef:
    return ChunkRef(row["run_id"], row["chunk_no"], row["job_id"])


async def create_chunks(connection: Connection, run_id: UUID, count: int) -> None:
    """Rows for every chunk of a new run, all pending."""
    await connection.execute(_CREATE, run_id, count)


async def queue_next(connection: Connection, run_id: UUID, count: int) -> list[ChunkRef]:
    """Mark up to `count` pending chunks queued; returns the chunks to enqueue."""
    return [_ref(row) for row in await connection.fetch(_QUEUE_NEXT, run_id, count)]


async def claim(
    executor: Executor, run_id: UUID, chunk_no: int, job_id: str, worker_id: str
) -> ClaimedChunk | None:
    """Take a queued chunk for this job; None when another job owns it or it is done."""
    row = await executor.fetchrow(_CLAIM, run_id, chunk_no, job_id, worker_id)
    if row is None:
        return None
    return ClaimedChunk(kind=row["kind"], seqs=tuple(row["items"] or ()), attempt=row["attempt"])


async def claim_next(
    executor: Executor, run_id: UUID, worker_id: str
) -> tuple[ChunkRef, int] | None:
    """The run's next pending chunk, held by this worker, and its attempt; None when no chunk
    is pending or the run no longer calls its agent."""
    row = await executor.fetchrow(_CLAIM_NEXT, run_id, worker_id)
    if row is None:
        return None
    return ChunkRef(run_id, row["chunk_no"], row["job_id"]), row["attempt"]


async def create_judge_chunk(connection: Connection, run_id: UUID, seqs: list[int]) -> ChunkRef:
    """A queued judge chunk for these result rows."""
    row = await connection.fetchrow(_CREATE_JUDGE_CHUNK, run_id, seqs)
    assert row is not None, "RETURNING always yields the row written"
    return _ref(row)


async def finish(connection: Connection, run_id: UUID, chunk_no: int, job_id: str) -> bool:
    """Mark a chunk done; False when it was not this job's (or is gone)."""
    status: str = await connection.execute(_FINISH, run_id, chunk_no, job_id)
    return status == "UPDATE 1"


async def hold(connection: Connection, run_id: UUID, chunk_no: int) -> bool:
    """Hold a chunk's row until the transaction ends, whoever's it is; False when it is gone
    (its run was deleted)."""
    held: bool | None = await connection.fetchval(_HOLD, run_id, chunk_no)
    return bool(held)


async def hand_back(executor: Executor, run_id: UUID, chunk_no: int, job_id: str) -> bool:
    """Return a chunk to the queue unfinished (a worker stopping politely); False when it was
    not this job's to return (done, or taken from it as stale)."""
    status: str = await executor.execute(_HAND_BACK, run_id, chunk_no, job_id)
    return status == "UPDATE 1"


async def heartbeat(executor: Executor, worker_id: str, held: list[tuple[UUID, int]]) -> None:
    """Tell the reaper this worker still holds these chunks."""
    await executor.execute(
        _HEARTBEAT, worker_id, [run for run, _ in held], [chunk for _, chunk in held]
    )


async def requeue_stale_judging(
    connection: Connection, stale_after_s: float, max_attempts: int
) -> list[ChunkRef]:
    """Judge chunks whose worker stopped beating, re-issued under new job ids."""
    rows = await connection.fetch(_REQUEUE_STALE_JUDGING, stale_after_s, max_attempts)
    return [_ref(row) for row in rows]


async def release_stale_lanes(
    connection: Connection, stale_after_s: float, max_attempts: int
) -> int:
    """Agent chunks whose worker stopped beating, pending again; how many."""
    status: str = await connection.execute(_RELEASE_STALE_LANES, stale_after_s, max_attempts)
    return int(status.split()[-1])


async def lanes_held(connection: Connection) -> list[tuple[UUID, int, int]]:
    """(run, its concurrency, agent chunks queued or held) of each server run still calling
    its agent with chunks pending."""
    rows = await connection.fetch(_LANES_HELD)
    return [(row["id"], row["concurrency"], row["held"]) for row in rows]


async def fail_poisoned(
    connection: Connection, stale_after_s: float, max_attempts: int
) -> list[UUID]:
    """Fail the runs of chunks that died `max_attempts` times; returns their ids."""
    rows = await connection.fetch(_FAIL_POISONED, stale_after_s, max_attempts)
    return [row["id"] for row in rows]


async def queued_before(connection: Connection, age_s: float) -> list[ChunkRef]:
    """Chunks queued for at least `age_s` seconds (their job may have been lost)."""
    return [_ref(row) for row in await connection.fetch(_QUEUED_BEFORE, age_s)]


async def reissue(connection: Connection, chunk: ChunkRef) -> ChunkRef | None:
    """Give a queued chunk whose job was lost a new job id."""
    row = await connection.fetchrow(_REISSUE, chunk.run_id, chunk.chunk_no, chunk.job_id)
    return None if row is None else _ref(row)
