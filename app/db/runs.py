"""Runs, their pinned case revisions, and their counters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg

from app.db.pool import Connection, Executor

RUN_COLUMNS = """
id, project_id, dataset_id, seq, mode, status, pass_threshold, trials, labels,
idempotency_key, request_hash, total, done, graded, passed, errored, no_checks,
pass_rate, ci_pass, ci_fail_reason, created_at, updated_at, finished_at,
agent_id, concurrency, case_count, chunk_size, started_at, judge_pending, judge_use_cache,
judge_stopped, judge_calls, judge_cached, judge_input_tokens, judge_output_tokens,
judge_cache_read_tokens, judge_cache_write_tokens, judge_cost_usd
"""

# Values in this order: id, project_id, dataset_id, mode, status, pass_threshold, trials,
# labels, idempotency_key, request_hash, agent_id, concurrency, judge_use_cache.
_INSERT = f"""
INSERT INTO eval_runs (id, project_id, dataset_id, mode, status, pass_threshold, trials,
                       labels, idempotency_key, request_hash, agent_id, concurrency,
                       judge_use_cache, total)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 0)
ON CONFLICT (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING {RUN_COLUMNS}
"""

_BY_IDEMPOTENCY_KEY = f"""
SELECT {RUN_COLUMNS} FROM eval_runs WHERE project_id = $1 AND idempotency_key = $2
"""

_PIN_CASES = """
INSERT INTO eval_run_cases (run_id, position, test_case_id, revision_id)
SELECT $1, row_number() OVER (ORDER BY seq), id, current_revision_id
FROM test_cases WHERE dataset_id = $2
"""

_SET_TOTAL = f"""
UPDATE eval_runs SET case_count = $2, total = $2 * trials, updated_at = now() WHERE id = $1
RETURNING {RUN_COLUMNS}
"""

_SET_CHUNK_SIZE = "UPDATE eval_runs SET chunk_size = $2 WHERE id = $1"

_BY_ID = f"SELECT {RUN_COLUMNS} FROM eval_runs WHERE id = $1"

_LOCK_BY_ID = f"SELECT {RUN_COLUMNS} FROM eval_runs WHERE id = $1 FOR UPDATE"

_MARK_RUNNING = """
UPDATE eval_runs SET status = 'running', started_at = now(), updated_at = now()
WHERE id = $1 AND status = 'queued'
"""

_STATUSES = "SELECT id, status FROM eval_runs WHERE id = ANY($1::uuid[])"

_NOTIFY = "SELECT pg_notify('agentlasso_runs', $1)"

_PINNED_AT_POSITIONS = """
SELECT p.position, p.test_case_id, p.revision_id, r.input, r.checks_version, r.checks,
       r.evaluation_criteria_json, r.expected_output, r.evaluation_type, r.min_confidence,
       r.description
FROM eval_run_cases p
JOIN test_case_revisions r ON r.id = p.revision_id
WHERE p.run_id = $1 AND p.position = ANY($2::int[])
"""

_GET = f"SELECT {RUN_COLUMNS} FROM eval_runs WHERE project_id = $1 AND id = $2"

_LOCK = f"SELECT {RUN_COLUMNS} FROM eval_runs WHERE project_id = $1 AND id = $2 FOR UPDATE"

_LIST = f"""
SELECT {RUN_COLUMNS} FROM eval_runs
WHERE project_id = $1
  AND ($2::uuid IS NULL OR dataset_id = $2)
  AND ($3::text IS NULL OR status = $3)
  AND ($4::bigint IS NULL OR seq < $4)
ORDER BY seq DESC
LIMIT $5
"""

_PINNED_CASES = """
SELECT p.test_case_id, p.revision_id, r.input, r.checks_version, r.checks,
       r.evaluation_criteria_json, r.expected_output, r.evaluation_type, r.min_confidence,
       r.description
FROM eval_run_cases p
JOIN test_case_revisions r ON r.id = p.revision_id
WHERE p.run_id = $1
ORDER BY p.position
"""

_PINNED_CASES_BY_ID = """
SELECT p.test_case_id, p.revision_id, r.input, r.checks_version, r.checks,
       r.evaluation_criteria_json, r.expected_output, r.evaluation_type, r.min_confidence,
       r.description
FROM eval_run_cases p
JOIN test_case_revisions r ON r.id = p.revision_id
WHERE p.run_id = $1 AND p.test_case_id = ANY($2::uuid[])
"""

_APPLY_COUNTS = f"""
UPDATE eval_runs
SET done = done + $2, graded = graded + $3, passed = passed + $4, errored = errored + $5,
    no_checks = no_checks + $6, judge_pending = judge_pending + $7, updated_at = now()
WHERE id = $1
RETURNING {RUN_COLUMNS}
"""

_ADD_JUDGE_USAGE = f"""
UPDATE eval_runs
SET judge_calls = judge_calls + $2, judge_cached = judge_cached + $3,
    judge_input_tokens = judge_input_tokens + $4, judge_output_tokens = judge_output_tokens + $5,
    judge_cache_read_tokens = judge_cache_read_tokens + $6,
    judge_cache_write_tokens = judge_cache_write_tokens + $7,
    judge_cost_usd = judge_cost_usd + $8,
    judge_stopped = coalesce(judge_stopped, $9), updated_at = now()
WHERE id = $1
RETURNING {RUN_COLUMNS}
"""

_SET_VERDICT = f"""
UPDATE eval_runs
SET status = $2, pass_rate = $3, ci_pass = $4, ci_fail_reason = $5, updated_at = now(),
    finished_at = CASE WHEN $2 IN ('completed', 'cancelled', 'failed')
                       THEN coalesce(finished_at, now()) END
WHERE id = $1
RETURNING {RUN_COLUMNS}
"""


async def insert_run(connection: Connection, values: Sequence[Any]) -> asyncpg.Record | None:
    """Insert a run (total 0 until its cases are pinned); None when its idempotency key exists."""
    row: asyncpg.Record | None = await connection.fetchrow(_INSERT, *values)
    return row


async def run_by_idempotency_key(
    connection: Connection, project_id: UUID, key: str
) -> asyncpg.Record | None:
    """The run an idempotency key already created."""
    row: asyncpg.Record | None = await connection.fetchrow(_BY_IDEMPOTENCY_KEY, project_id, key)
    return row


async def pin_cases(connection: Connection, run_id: UUID, dataset_id: UUID) -> asyncpg.Record:
    """Pin the dataset's current revisions to the run in one statement; set its total."""
    status: str = await connection.execute(_PIN_CASES, run_id, dataset_id)
    row: asyncpg.Record | None = await connection.fetchrow(
        _SET_TOTAL, run_id, int(status.split()[-1])
    )
    assert row is not None, "RETURNING always yields the row written"
    return row


async def set_chunk_size(connection: Connection, run_id: UUID, chunk_size: int) -> None:
    """Record how many items each chunk of a server-mode run holds."""
    await connection.execute(_SET_CHUNK_SIZE, run_id, chunk_size)


async def run_by_id(executor: Executor, run_id: UUID) -> asyncpg.Record | None:
    """A run by id alone: for workers, which act for every project."""
    row: asyncpg.Record | None = await executor.fetchrow(_BY_ID, run_id)
    return row


async def lock_run_by_id(connection: Connection, run_id: UUID) -> asyncpg.Record | None:
    """A run by id, locked until the transaction ends (workers)."""
    row: asyncpg.Record | None = await connection.fetchrow(_LOCK_BY_ID, run_id)
    return row


async def mark_running(executor: Executor, run_id: UUID) -> None:
    """A queued run becomes running when its first chunk starts."""
    await executor.execute(_MARK_RUNNING, run_id)


async def statuses(executor: Executor, run_ids: list[UUID]) -> dict[UUID, str]:
    """The status of each of these runs."""
    return {row["id"]: row["status"] for row in await executor.fetch(_STATUSES, run_ids)}


async def notify(executor: Executor, run_id: UUID, kind: str) -> None:
    """Tell waiting API processes about a run (delivered when the transaction commits)."""
    await executor.execute(_NOTIFY, f"{run_id} {kind}")


async def pinned_at_positions(
    executor: Executor, run_id: UUID, positions: list[int]
) -> list[asyncpg.Record]:
    """The pinned cases at these positions (1-based, in dataset order)."""
    return list(await executor.fetch(_PINNED_AT_POSITIONS, run_id, positions))


async def get_run(executor: Executor, project_id: UUID, run_id: UUID) -> asyncpg.Record | None:
    """The run, when it is in this project."""
    row: asyncpg.Record | None = await executor.fetchrow(_GET, project_id, run_id)
    return row


async def lock_run(connection: Connection, project_id: UUID, run_id: UUID) -> asyncpg.Record | None:
    """The run, locked until the transaction ends: its counters change under this lock only."""
    row: asyncpg.Record | None = await connection.fetchrow(_LOCK, project_id, run_id)
    return row


async def list_runs(
    executor: Executor,
    project_id: UUID,
    dataset_id: UUID | None,
    status: str | None,
    before_seq: int | None,
    limit: int,
) -> list[asyncpg.Record]:
    """A page of the project's runs, newest first."""
    return list(await executor.fetch(_LIST, project_id, dataset_id, status, before_seq, limit))


async def pinned_cases(connection: Connection, run_id: UUID) -> list[asyncpg.Record]:
    """Every case the run grades, at its pinned revision, in dataset order."""
    return list(await connection.fetch(_PINNED_CASES, run_id))


async def pinned_cases_by_id(
    connection: Connection, run_id: UUID, test_case_ids: list[UUID]
) -> list[asyncpg.Record]:
    """The pinned revisions of these cases (those not in the run are simply absent)."""
    return list(await connection.fetch(_PINNED_CASES_BY_ID, run_id, test_case_ids))


async def add_judge_usage(
    connection: Connection, run_id: UUID, usage: Sequence[int | float], stopped: str | None
) -> asyncpg.Record:
    """Add (calls, cached, input, output, cache read, cache write tokens, cost) to the run."""
    row: asyncpg.Record | None = await connection.fetchrow(
        _ADD_JUDGE_USAGE, run_id, *usage, stopped
    )
    assert row is not None, "RETURNING always yields the row written"
    return row


async def apply_counts(
    connection: Connection, run_id: UUID, delta: Sequence[int]
) -> asyncpg.Record:
    """Add (done, graded, passed, errored, no_checks, judge_pending) deltas to the counters."""
    row: asyncpg.Record | None = await connection.fetchrow(_APPLY_COUNTS, run_id, *delta)
    assert row is not None, "RETURNING always yields the row written"
    return row


async def set_verdict(
    connection: Connection,
    run_id: UUID,
    status: str,
    pass_rate: float | None,
    ci_pass: bool,
    ci_fail_reason: str | None,
) -> asyncpg.Record:
    """Store the run's status and gate."""
    row: asyncpg.Record | None = await connection.fetchrow(
        _SET_VERDICT, run_id, status, pass_rate, ci_pass, ci_fail_reason
    )
    assert row is not None, "RETURNING always yields the row written"
    return row
