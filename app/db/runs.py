"""Runs, their pinned case revisions, and their counters."""

from __future__ import annotations

import functools
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from app.db import comparisons
from app.db.pool import Connection, Executor
from app.db.test_cases import content_of
from app.domain.results import Gate
from app.domain.runs import Counters, Run, RunGate, RunMode, RunStatus
from app.domain.test_cases import PinnedCase
from app.grading import run_gate, settled_status
from app.off_loop import off_loop_when_many

# The Run struct's fields are the columns: a row converts with Run(**row).
RUN_COLUMNS = ", ".join(Run.__struct_fields__)


class RunInsert(msgspec.Struct, frozen=True, kw_only=True):
    """A new run's settings; the field names and order are the INSERT's columns."""

    id: UUID
    project_id: UUID
    dataset_id: UUID
    mode: RunMode
    status: RunStatus
    pass_threshold: float
    trials: int
    labels: dict[str, str] | None
    idempotency_key: str | None
    request_hash: bytes
    agent_id: UUID | None
    concurrency: int | None
    judge_use_cache: bool
    gate: RunGate
    baseline_run_id: UUID | None


_INSERT = f"""
INSERT INTO eval_runs ({", ".join(RunInsert.__struct_fields__)}, total)
VALUES ({", ".join(f"${i}" for i in range(1, len(RunInsert.__struct_fields__) + 1))}, 0)
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

# The cases that failed (or whose agent call failed) in an earlier run of the dataset, pinned at
# their current revisions: a fixed check is what the new run grades.
_PIN_FAILED_CASES = """
INSERT INTO eval_run_cases (run_id, position, test_case_id, revision_id)
SELECT $1, row_number() OVER (ORDER BY seq), id, current_revision_id
FROM test_cases
WHERE dataset_id = $2
  AND id IN (SELECT test_case_id FROM case_results
             WHERE run_id = $3 AND (outcome = 'failed' OR errored))
"""

_SET_TOTAL = f"""
UPDATE eval_runs SET case_count = $2, total = $2 * trials, updated_at = now() WHERE id = $1
RETURNING {RUN_COLUMNS}
"""

# Holds the project's row: runs of one project are started one at a time, so its quota of
# runs going on cannot be overshot by requests racing each other.
_ACTIVE_SERVER_RUNS = """
WITH held AS (SELECT id FROM projects WHERE id = $1 FOR UPDATE)
SELECT count(*) FROM eval_runs
WHERE project_id = (SELECT id FROM held) AND mode = 'server'
  AND status NOT IN ('completed', 'cancelled', 'failed')
"""

_SET_CHUNK_SIZE = "UPDATE eval_runs SET chunk_size = $2 WHERE id = $1"

_BY_ID = f"SELECT {RUN_COLUMNS} FROM eval_runs WHERE id = $1"

# The newest completed run of the dataset whose gate passed, else the newest completed one.
_CHOOSE_BASELINE = """
SELECT id FROM eval_runs
WHERE project_id = $1 AND dataset_id = $2 AND status = 'completed'
ORDER BY ci_pass DESC, seq DESC
LIMIT 1
"""

_COMPLETED_RUN_OF = """
SELECT EXISTS (SELECT 1 FROM eval_runs
               WHERE project_id = $1 AND dataset_id = $2 AND id = $3 AND status = 'completed')
"""

# A case passes when every trial passed; it is graded when a trial was; its trials disagree
# when some passed and some did not.
_COUNT_CASES = f"""
WITH per_case AS (
    SELECT bool_or(graded) AS graded, bool_and(outcome = 'passed') AS every_trial,
           bool_or(outcome = 'passed') AS some_trial
    FROM case_results WHERE run_id = $1 GROUP BY test_case_id
)
UPDATE eval_runs SET
    cases_graded = (SELECT count(*) FROM per_case WHERE graded),
    cases_passed = (SELECT count(*) FROM per_case WHERE graded AND every_trial),
    cases_passed_any = (SELECT count(*) FROM per_case WHERE graded AND some_trial),
    flaky_count = (SELECT count(*) FROM per_case WHERE some_trial AND NOT every_trial)
WHERE id = $1
RETURNING {RUN_COLUMNS}
"""

_CASES_ARE_RESULTS = f"""
UPDATE eval_runs SET cases_graded = graded, cases_passed = passed, cases_passed_any = passed,
                     flaky_count = 0
WHERE id = $1
RETURNING {RUN_COLUMNS}
"""

_SET_NEW_FAILURES = f"""
UPDATE eval_runs SET new_failures = $2 WHERE id = $1 RETURNING {RUN_COLUMNS}
"""

# NO KEY UPDATE: a run's id never changes, and rows that only reference the run (results,
# chunks, pinned cases) need not wait for its lock holder to commit.
_LOCK_BY_ID = f"SELECT {RUN_COLUMNS} FROM eval_runs WHERE id = $1 FOR NO KEY UPDATE"

_MARK_RUNNING = """
UPDATE eval_runs SET status = 'running', started_at = now(), updated_at = now()
WHERE id = $1 AND status = 'queued'
"""

_STATUSES = "SELECT id, status FROM eval_runs WHERE id = ANY($1::uuid[])"

_NOTIFY = "SELECT pg_notify('agentlasso_runs', $1)"

# Reads the partial index of runs going on (eval_runs_project_active_idx), never the history.
_ACTIVE_BY_STATUS = """
SELECT status, count(*) AS runs FROM eval_runs
WHERE status NOT IN ('completed', 'cancelled', 'failed')
GROUP BY status
"""

_PINNED_AT_POSITIONS = """
SELECT p.position, p.test_case_id, p.revision_id, r.input, r.checks_version, r.checks,
       r.evaluation_criteria_json, r.expected_output, r.evaluation_type, r.min_confidence,
       r.description
FROM eval_run_cases p
JOIN test_case_revisions r ON r.id = p.revision_id
WHERE p.run_id = $1 AND p.position = ANY($2::int[])
"""

_GET = f"SELECT {RUN_COLUMNS} FROM eval_runs WHERE project_id = $1 AND id = $2"

_LOCK = f"""
SELECT {RUN_COLUMNS} FROM eval_runs WHERE project_id = $1 AND id = $2 FOR NO KEY UPDATE
"""

_LIST = f"""
SELECT {RUN_COLUMNS} FROM eval_runs
WHERE project_id = $1
  AND ($2::uuid IS NULL OR dataset_id = $2)
  AND ($3::text IS NULL OR status = $3)
  AND ($4::bigint IS NULL OR seq < $4)
  AND ($6::boolean IS NULL OR ci_pass = $6)
ORDER BY seq DESC
LIMIT $5
"""

_PINNED_PAGE = """
SELECT p.position, p.test_case_id, p.revision_id, r.input, r.checks_version, r.checks,
       r.evaluation_criteria_json, r.expected_output, r.evaluation_type, r.min_confidence,
       r.description
FROM eval_run_cases p
JOIN test_case_revisions r ON r.id = p.revision_id
WHERE p.run_id = $1 AND p.position > $2
ORDER BY p.position
LIMIT $3
"""

# Cases fetched per query when a CI batch is graded.
PINNED_PAGE = 2_000
_PINNED_CASES_BY_ID = """
SELECT p.position, p.test_case_id, p.revision_id, r.input, r.checks_version, r.checks,
       r.evaluation_criteria_json, r.expected_output, r.evaluation_type, r.min_confidence,
       r.description
FROM unnest($2::uuid[]) AS k(test_case_id)
JOIN eval_run_cases p ON p.run_id = $1 AND p.test_case_id = k.test_case_id
JOIN test_case_revisions r ON r.id = p.revision_id
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


def _run(row: asyncpg.Record | None) -> Run:
    assert row is not None, "RETURNING always yields the row written"
    return Run(**row)


def _run_or_none(row: asyncpg.Record | None) -> Run | None:
    return None if row is None else Run(**row)


def _pinned(row: asyncpg.Record) -> PinnedCase:
    return PinnedCase(
        position=row["position"],
        test_case_id=row["test_case_id"],
        revision_id=row["revision_id"],
        content=content_of(row),
    )


async def insert_run(connection: Connection, values: RunInsert) -> Run | None:
    """Insert a run (total 0 until its cases are pinned); None when its idempotency key exists."""
    row = await connection.fetchrow(_INSERT, *msgspec.structs.astuple(values))
    return _run_or_none(row)


async def run_by_idempotency_key(connection: Connection, project_id: UUID, key: str) -> Run | None:
    """The run an idempotency key already created."""
    return _run_or_none(await connection.fetchrow(_BY_IDEMPOTENCY_KEY, project_id, key))


async def pin_cases(
    connection: Connection, run_id: UUID, dataset_id: UUID, failed_in: UUID | None = None
) -> Run:
    """Pin the dataset's current revisions to the run in one statement (only the cases that
    failed in the run `failed_in`, when given); set its total."""
    if failed_in is None:
        status: str = await connection.execute(_PIN_CASES, run_id, dataset_id)
    else:
        status = await connection.execute(_PIN_FAILED_CASES, run_id, dataset_id, failed_in)
    return _run(await connection.fetchrow(_SET_TOTAL, run_id, int(status.split()[-1])))


async def choose_baseline(
    connection: Connection, project_id: UUID, dataset_id: UUID
) -> UUID | None:
    """The baseline a new run of the dataset gets when it names none."""
    found: UUID | None = await connection.fetchval(_CHOOSE_BASELINE, project_id, dataset_id)
    return found


async def is_completed_run_of(
    connection: Connection, project_id: UUID, dataset_id: UUID, run_id: UUID
) -> bool:
    """Whether the run is a completed run of the dataset, in the project."""
    found: bool = await connection.fetchval(_COMPLETED_RUN_OF, project_id, dataset_id, run_id)
    return found


async def lock_active_server_runs(connection: Connection, project_id: UUID) -> int:
    """How many server-mode runs of the project are going on, the project held until commit."""
    count: int = await connection.fetchval(_ACTIVE_SERVER_RUNS, project_id)
    return count


async def set_chunk_size(connection: Connection, run_id: UUID, chunk_size: int) -> None:
    """Record how many items each chunk of a server-mode run holds."""
    await connection.execute(_SET_CHUNK_SIZE, run_id, chunk_size)


async def run_by_id(executor: Executor, run_id: UUID) -> Run | None:
    """A run by id alone: for workers, which act for every project."""
    return _run_or_none(await executor.fetchrow(_BY_ID, run_id))


async def lock_run_by_id(connection: Connection, run_id: UUID) -> Run | None:
    """A run by id, locked until the transaction ends (workers)."""
    return _run_or_none(await connection.fetchrow(_LOCK_BY_ID, run_id))


async def mark_running(executor: Executor, run_id: UUID) -> None:
    """A queued run becomes running when its first chunk starts."""
    await executor.execute(_MARK_RUNNING, run_id)


async def statuses(executor: Executor, run_ids: list[UUID]) -> dict[UUID, str]:
    """The status of each of these runs."""
    return {row["id"]: row["status"] for row in await executor.fetch(_STATUSES, run_ids)}


async def active_by_status(executor: Executor) -> dict[str, int]:
    """How many runs of every project are going on, by status."""
    return {row["status"]: row["runs"] for row in await executor.fetch(_ACTIVE_BY_STATUS)}


async def notify(executor: Executor, run_id: UUID, kind: str) -> None:
    """Tell waiting API processes about a run (delivered when the transaction commits)."""
    await executor.execute(_NOTIFY, f"{run_id} {kind}")


async def pinned_at_positions(
    executor: Executor, run_id: UUID, positions: list[int]
) -> list[PinnedCase]:
    """The pinned cases at these positions (1-based, in dataset order)."""
    return [_pinned(row) for row in await executor.fetch(_PINNED_AT_POSITIONS, run_id, positions)]


async def get_run(executor: Executor, project_id: UUID, run_id: UUID) -> Run | None:
    """The run, when it is in this project."""
    return _run_or_none(await executor.fetchrow(_GET, project_id, run_id))


async def lock_run(connection: Connection, project_id: UUID, run_id: UUID) -> Run | None:
    """The run, locked until the transaction ends: its counters change under this lock only."""
    return _run_or_none(await connection.fetchrow(_LOCK, project_id, run_id))


async def list_runs(
    executor: Executor,
    project_id: UUID,
    dataset_id: UUID | None,
    status: str | None,
    before_seq: int | None,
    limit: int,
    ci_pass: bool | None = None,
) -> list[Run]:
    """A page of the project's runs, newest first."""
    rows = await executor.fetch(_LIST, project_id, dataset_id, status, before_seq, limit, ci_pass)
    return [Run(**row) for row in rows]


async def pinned_page(
    executor: Executor, run_id: UUID, after_position: int, limit: int
) -> list[PinnedCase]:
    """A page of the run's pinned cases in dataset order, after a position."""
    rows = await executor.fetch(_PINNED_PAGE, run_id, after_position, limit)
    return [_pinned(row) for row in rows]


async def pinned_cases_by_id(
    connection: Connection, run_id: UUID, test_case_ids: list[UUID]
) -> dict[UUID, PinnedCase]:
    """The pinned revisions of these cases by id (those not in the run are simply absent)."""
    pinned: dict[UUID, PinnedCase] = {}
    # A page at a time: the rows of one result are decoded in one go, holding the event loop.
    for start in range(0, len(test_case_ids), PINNED_PAGE):
        page = test_case_ids[start : start + PINNED_PAGE]
        rows = await connection.fetch(_PINNED_CASES_BY_ID, run_id, page)
        pinned |= await off_loop_when_many(len(rows), functools.partial(_pinned_by_id, rows))
    return pinned


def _pinned_by_id(rows: list[asyncpg.Record]) -> dict[UUID, PinnedCase]:
    return {row["test_case_id"]: _pinned(row) for row in rows}


class JudgeSpend(msgspec.Struct, frozen=True, kw_only=True):
    """What some judge verdicts cost: calls, cache hits, tokens and dollars."""

    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0


async def add_judge_usage(
    connection: Connection, run_id: UUID, spend: JudgeSpend, stopped: str | None
) -> Run:
    """Add what verdicts cost to the run; `stopped` says why the run judges no more, if so."""
    values: list[Any] = list(msgspec.structs.astuple(spend))
    return _run(await connection.fetchrow(_ADD_JUDGE_USAGE, run_id, *values, stopped))


async def apply_counts(connection: Connection, run_id: UUID, delta: Counters) -> Run:
    """Move the run's counters by this delta (under the run's row lock)."""
    return _run(await connection.fetchrow(_APPLY_COUNTS, run_id, *msgspec.structs.astuple(delta)))


async def set_verdict(connection: Connection, run_id: UUID, status: str, gate: Gate) -> Run:
    """Store the run's status and gate."""
    row = await connection.fetchrow(
        _SET_VERDICT, run_id, status, gate.pass_rate, gate.ci_pass, gate.ci_fail_reason
    )
    return _run(row)


async def store_gate(connection: Connection, run: Run) -> Run:
    """Recompute the gate from the counters; a run with every result in is completed, and then
    compared with its baseline (its new failures are what a no_new_failures gate decides on)."""
    status = settled_status(run)
    if status == "completed":
        # One trial a case: its results are its cases, and the counters already count them.
        counting = _COUNT_CASES if run.trials > 1 else _CASES_ARE_RESULTS
        run = _run(await connection.fetchrow(counting, run.id))
        run = await _compare_with_baseline(connection, run)
    return await set_verdict(connection, run.id, status, run_gate(run))


async def _compare_with_baseline(connection: Connection, run: Run) -> Run:
    """Count the run's new failures against its baseline (none without one). Comparisons kept
    of the run, either side, are dropped first: its results have just changed."""
    await comparisons.forget_comparisons(connection, run.id)
    new_failures = 0
    if run.baseline_run_id is not None:
        compared = await comparisons.compare(connection, run.id, run.baseline_run_id)
        new_failures = compared.new_failures
    return _run(await connection.fetchrow(_SET_NEW_FAILURES, run.id, new_failures))
