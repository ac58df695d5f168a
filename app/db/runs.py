"""Runs and their counters, as their readers see them: the run's row and its tallies."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from agentlasso.db.pool import Connection, Executor
from agentlasso.db.run_counts import TALLIES_OF, run_column
from agentlasso.domain.grades import Gate
from agentlasso.domain.runs import Run, RunGate, RunMode, RunStatus
from agentlasso.grading import run_gate, settled_status

# The Run struct's fields are the columns (but `unfolded`): a row converts with Run(**row).
COLUMN_FIELDS = tuple(name for name in Run.__struct_fields__ if name != "unfolded")
RUN_COLUMNS = ", ".join(COLUMN_FIELDS)

# A run as it stands: its row `r` plus its tallies `t`, read in one statement (one snapshot).
_READ = f"""
SELECT {", ".join(run_column(name) for name in COLUMN_FIELDS)},
       coalesce(t.tallies, 0) AS unfolded
FROM eval_runs r LEFT JOIN LATERAL ({TALLIES_OF.format("r.id")}) t ON true
"""


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
    tags: list[str] | None = None
    dataset_version_id: UUID | None = None
    dataset_version: str | None = None
    declared_tools: dict[str, Any] | None = None


_INSERT = f"""
INSERT INTO eval_runs ({", ".join(RunInsert.__struct_fields__)}, total)
VALUES ({", ".join(f"${i}" for i in range(1, len(RunInsert.__struct_fields__) + 1))}, 0)
ON CONFLICT (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING {RUN_COLUMNS}
"""

_BY_IDEMPOTENCY_KEY = _READ + "WHERE r.project_id = $1 AND r.idempotency_key = $2"

# The cases a run pins, from the dataset's live cases at their current revisions or from a
# version's frozen ones, in order: {source} names them `c`, with their `case_id`, `revision_id`
# and `ordinal`. The revision `r` is joined only when the tags are asked about.
_PIN = """
INSERT INTO eval_run_cases (run_id, position, test_case_id, revision_id)
SELECT $1, row_number() OVER (ORDER BY c.ordinal), c.case_id, c.revision_id
FROM {source}{tagged}
WHERE {where}
"""
_LIVE_CASES = (
    "(SELECT id AS case_id, current_revision_id AS revision_id, seq AS ordinal, dataset_id "
    "FROM test_cases) c",
    "c.dataset_id = $2",
)
_VERSION_CASES = (
    "(SELECT test_case_id AS case_id, revision_id, position AS ordinal, version_id "
    "FROM dataset_version_cases) c",
    "c.version_id = $2",
)
_TAGGED = " JOIN test_case_revisions r ON r.id = c.revision_id"
# The cases that failed (or whose agent call failed) in an earlier run: a re-run of them.
_FAILED_IN = (
    "c.case_id IN (SELECT test_case_id FROM case_results "
    "WHERE run_id = $3 AND (outcome = 'failed' OR errored))"
)


def _pin_statement(version: bool, tags: bool) -> str:
    """The pin for a live dataset or a version, with the tags as $4 when asked about."""
    source, where = _VERSION_CASES if version else _LIVE_CASES
    conditions = [where, "($3::uuid IS NULL OR " + _FAILED_IN + ")"]
    if tags:
        conditions.append("r.tags && $4::text[]")
    return _PIN.format(
        source=source, tagged=_TAGGED if tags else "", where=" AND ".join(conditions)
    )


# Before its first store: the row is the whole run.
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

_BY_ID = _READ + "WHERE r.id = $1"

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

# NO KEY UPDATE: a run's id never changes, and rows that only reference the run (chunks,
# pinned cases) need not wait for its lock holder to commit. The run is read by a statement
# of its own once held: one that waited for the lock reads every commit before it.
_HOLD_BY_ID = "SELECT id FROM eval_runs WHERE id = $1 FOR NO KEY UPDATE"

_MARK_RUNNING = """
UPDATE eval_runs SET status = 'running', started_at = now(), updated_at = now()
WHERE id = $1 AND status = 'queued'
"""

# Runs whose stores may have moved them on: those with tallies, and those going on whose row
# says every result is in (their last tallies folded by the reaper before anyone settled).
_MAY_SETTLE = (
    _READ
    + """
WHERE r.id IN (SELECT DISTINCT run_id FROM run_tallies)
   OR (r.status NOT IN ('completed', 'cancelled', 'failed') AND r.done >= r.total)
"""
)

_STATUSES = "SELECT id, status FROM eval_runs WHERE id = ANY($1::uuid[])"

_NOTIFY = "SELECT pg_notify('agentlasso_runs', $1)"

# Reads the partial index of runs going on (eval_runs_project_active_idx), never the history.
_ACTIVE_BY_STATUS = """
SELECT status, count(*) AS runs FROM eval_runs
WHERE status NOT IN ('completed', 'cancelled', 'failed')
GROUP BY status
"""

_GET = _READ + "WHERE r.project_id = $1 AND r.id = $2"

_HOLD = "SELECT id FROM eval_runs WHERE project_id = $1 AND id = $2 FOR NO KEY UPDATE"

# A run going on has not passed (its stored ci_pass is false, and so is the one it reads as).
_LIST = (
    _READ
    + """
WHERE r.project_id = $1
  AND ($2::uuid IS NULL OR r.dataset_id = $2)
  AND ($3::text IS NULL OR r.status = $3)
  AND ($4::bigint IS NULL OR r.seq < $4)
  AND ($6::boolean IS NULL OR r.ci_pass = $6)
ORDER BY r.seq DESC
LIMIT $5
"""
)

_SET_VERDICT = """
UPDATE eval_runs
SET status = $2, pass_rate = $3, ci_pass = $4, ci_fail_reason = $5, updated_at = now(),
    finished_at = CASE WHEN $2 IN ('completed', 'cancelled', 'failed')
                       THEN coalesce(finished_at, now()) END
WHERE id = $1
"""


def _run(row: asyncpg.Record | None) -> Run:
    assert row is not None, "RETURNING always yields the row written"
    return _as_read(row)


def _run_or_none(row: asyncpg.Record | None) -> Run | None:
    return None if row is None else _as_read(row)


def _as_read(row: asyncpg.Record) -> Run:
    """The run as it stands. A run going on is read with its gate as its counters decide it:
    its stores no longer write the gate on its row (every chunk of the run would queue there),
    and this is what they wrote when they did."""
    run = Run(**row)
    if run.is_final:
        return run
    gate = run_gate(run)
    return msgspec.structs.replace(
        run, pass_rate=gate.pass_rate, ci_pass=gate.ci_pass, ci_fail_reason=gate.ci_fail_reason
    )


def settle_due(run: Run) -> bool:
    """Whether stores moved the run on since it last settled (app/db/run_gates.settle): every
    result is in, or the judge's last verdict, while its status says otherwise; or stores were
    counted after it ended (a chunk in flight when it was cancelled)."""
    if run.is_final:
        return run.unfolded > 0
    return settled_status(run) != run.status


async def insert_run(connection: Connection, values: RunInsert) -> Run | None:
    """Insert a run (total 0 until its cases are pinned); None when its idempotency key exists."""
    row = await connection.fetchrow(_INSERT, *msgspec.structs.astuple(values))
    return _run_or_none(row)


async def run_by_idempotency_key(connection: Connection, project_id: UUID, key: str) -> Run | None:
    """The run an idempotency key already created."""
    return _run_or_none(await connection.fetchrow(_BY_IDEMPOTENCY_KEY, project_id, key))


async def pin_cases(
    connection: Connection,
    run_id: UUID,
    dataset_id: UUID,
    failed_in: UUID | None = None,
    *,
    tags: list[str] | None = None,
    version_id: UUID | None = None,
) -> Run:
    """Pin the run's cases in one statement and set its total: the dataset's current revisions,
    or the version's frozen ones; with `tags`, only the cases with one of them; with
    `failed_in`, only the cases that failed in that run."""
    statement = _pin_statement(version=version_id is not None, tags=tags is not None)
    arguments = [run_id, version_id or dataset_id, failed_in, *([] if tags is None else [tags])]
    status: str = await connection.execute(statement, *arguments)
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


async def declared_tools(executor: Executor, run_id: UUID) -> dict[str, Any] | None:
    """The input schemas of the tools the run's agent declared when it started, by name."""
    tools: dict[str, Any] | None = await executor.fetchval(_DECLARED_TOOLS, run_id)
    return tools


_DECLARED_TOOLS = "SELECT declared_tools FROM eval_runs WHERE id = $1"


async def lock_run_by_id(connection: Connection, run_id: UUID) -> Run | None:
    """A run by id, locked until the transaction ends (workers)."""
    if await connection.fetchval(_HOLD_BY_ID, run_id) is None:
        return None
    return await run_by_id(connection, run_id)


async def runs_to_settle(executor: Executor) -> list[UUID]:
    """The runs whose settling is due (settle_due), of every project."""
    runs = [_as_read(row) for row in await executor.fetch(_MAY_SETTLE)]
    return [run.id for run in runs if settle_due(run)]


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


async def get_run(executor: Executor, project_id: UUID, run_id: UUID) -> Run | None:
    """The run, when it is in this project."""
    return _run_or_none(await executor.fetchrow(_GET, project_id, run_id))


async def lock_run(connection: Connection, project_id: UUID, run_id: UUID) -> Run | None:
    """The run, locked until the transaction ends: its status, gate and the counters on its row
    change under this lock only."""
    if await connection.fetchval(_HOLD, project_id, run_id) is None:
        return None
    return await run_by_id(connection, run_id)


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


async def set_verdict(connection: Connection, run_id: UUID, status: str, gate: Gate) -> Run:
    """Store the run's status and gate."""
    await connection.execute(
        _SET_VERDICT, run_id, status, gate.pass_rate, gate.ci_pass, gate.ci_fail_reason
    )
    return _run(await connection.fetchrow(_BY_ID, run_id))
