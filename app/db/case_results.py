"""Case results: one row per (run, test case, trial)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from app.db.pool import Connection, Executor

RESULT_COLUMNS = (
    "run_id",
    "test_case_id",
    "trial",
    "revision_id",
    "outcome",
    "graded",
    "pass_fail",
    "no_checks",
    "errored",
    "score",
    "partially_graded",
    "judge_reasoning",
    "check_results",
    "ungraded_items",
    "output_reported",
    "actual_output",
    "tool_calls_reported",
    "actual_tool_calls",
    "agent_latency_ms",
    "agent_attempts",
    "agent_error",
    "judge_pending",
    "judge_records",
)

# Removing the results a batch replaces, returning what they contributed to the counters.
_DELETE_REPLACED = """
DELETE FROM case_results
WHERE run_id = $1 AND trial = $2 AND test_case_id = ANY($3::uuid[])
RETURNING graded, pass_fail, errored, no_checks, judge_pending
"""

# Each row once: a chunk done twice (a re-run after a crash) inserts nothing the second time,
# and RETURNING names exactly the rows that count.
_INSERT_NEW = """
INSERT INTO case_results (run_id, test_case_id, trial, revision_id, outcome, graded, pass_fail,
    no_checks, errored, score, partially_graded, judge_reasoning, check_results, ungraded_items,
    output_reported, actual_output, tool_calls_reported, actual_tool_calls, agent_latency_ms,
    agent_attempts, agent_error, judge_pending, judge_records)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::uuid[], $5::text[], $6::bool[],
    $7::bool[], $8::bool[], $9::bool[], $10::float8[], $11::bool[], $12::text[], $13::jsonb[],
    $14::jsonb[], $15::bool[], $16::jsonb[], $17::bool[], $18::jsonb[], $19::int[], $20::jsonb[],
    $21::text[], $22::bool[], $23::jsonb[])
ON CONFLICT (run_id, test_case_id, trial) DO NOTHING
RETURNING test_case_id, trial, seq, graded, pass_fail, errored, no_checks, judge_pending
"""

# The rows a judge chunk re-grades, locked, with what they counted for before.
_LOCK_PENDING = """
SELECT c.seq, c.test_case_id, c.trial, c.graded, c.pass_fail, c.no_checks, c.errored,
       c.judge_pending, c.actual_output,
       c.output_reported, c.actual_tool_calls, c.tool_calls_reported, c.agent_error,
       r.input, r.checks_version, r.checks, r.evaluation_criteria_json, r.expected_output,
       r.evaluation_type, r.min_confidence, r.description
FROM case_results c JOIN test_case_revisions r ON r.id = c.revision_id
WHERE c.run_id = $1 AND c.seq = ANY($2::bigint[]) AND c.judge_pending
FOR UPDATE OF c
"""

_PENDING_SEQS = """
SELECT seq FROM case_results
WHERE run_id = $1 AND judge_pending AND test_case_id = ANY($2::uuid[])
"""

_SET_JUDGED = """
UPDATE case_results c
SET outcome = u.outcome, graded = u.graded, pass_fail = u.pass_fail, score = u.score,
    partially_graded = u.partially_graded, judge_reasoning = u.judge_reasoning,
    check_results = u.check_results, judge_records = u.judge_records, judge_pending = false
FROM unnest($2::bigint[], $3::text[], $4::bool[], $5::bool[], $6::float8[], $7::bool[],
            $8::text[], $9::jsonb[], $10::jsonb[])
     AS u(seq, outcome, graded, pass_fail, score, partially_graded, judge_reasoning,
          check_results, judge_records)
WHERE c.run_id = $1 AND c.seq = u.seq
"""

_BY_IDS = """
SELECT * FROM case_results WHERE run_id = $1 AND test_case_id = ANY($2::uuid[]) AND trial = 1
"""

_EXISTING = """
SELECT test_case_id, trial FROM case_results
WHERE run_id = $1 AND test_case_id = ANY($2::uuid[])
"""

_PAGE = """
SELECT * FROM case_results
WHERE run_id = $1 AND seq > $2 AND ($3::text IS NULL OR outcome = $3)
ORDER BY seq
LIMIT $4
"""


async def delete_replaced(
    connection: Connection, run_id: UUID, trial: int, test_case_ids: list[UUID]
) -> list[asyncpg.Record]:
    """Delete the existing results for these cases; returns their counter flags."""
    return list(await connection.fetch(_DELETE_REPLACED, run_id, trial, test_case_ids))


async def copy_results(connection: Connection, rows: Sequence[Sequence[Any]]) -> None:
    """Store new results (rows in RESULT_COLUMNS order) through COPY."""
    await connection.copy_records_to_table("case_results", records=rows, columns=RESULT_COLUMNS)


_JSONB_COLUMNS = frozenset(
    RESULT_COLUMNS.index(name)
    for name in ("check_results", "ungraded_items", "actual_output", "actual_tool_calls",
                 "agent_attempts", "judge_records")
)  # fmt: skip
_encoder = msgspec.json.Encoder()


def _as_jsonb_element(value: Any) -> msgspec.Raw | None:
    # Inside a jsonb[] parameter asyncpg would read a list or tuple as a nested array: send
    # each value as already-encoded JSON, which it passes through whole.
    return None if value is None else msgspec.Raw(_encoder.encode(value))


async def insert_new(connection: Connection, rows: Sequence[Sequence[Any]]) -> list[asyncpg.Record]:
    """Store results not stored yet (rows in RESULT_COLUMNS order); returns the ones inserted."""
    if not rows:
        return []
    columns = [
        [_as_jsonb_element(value) for value in column] if index in _JSONB_COLUMNS else list(column)
        for index, column in enumerate(zip(*rows, strict=True))
    ]
    return list(await connection.fetch(_INSERT_NEW, *columns))


async def existing(
    executor: Executor, run_id: UUID, test_case_ids: list[UUID]
) -> set[tuple[UUID, int]]:
    """(test_case_id, trial) pairs of these cases that already have a result."""
    rows = await executor.fetch(_EXISTING, run_id, test_case_ids)
    return {(row["test_case_id"], row["trial"]) for row in rows}


async def list_results(
    executor: Executor,
    run_id: UUID,
    after_seq: int,
    outcome: str | None,
    limit: int,
) -> list[asyncpg.Record]:
    """A page of a run's results in the order they arrived."""
    return list(await executor.fetch(_PAGE, run_id, after_seq, outcome, limit))


def as_jsonb_column(values: Sequence[Any]) -> list[msgspec.Raw | None]:
    """A column of JSON values for a jsonb[] parameter."""
    return [_as_jsonb_element(value) for value in values]


async def lock_pending(
    connection: Connection, run_id: UUID, seqs: list[int]
) -> list[asyncpg.Record]:
    """The results still waiting for verdicts among these, locked, with their content."""
    return list(await connection.fetch(_LOCK_PENDING, run_id, seqs))


async def pending_seqs(
    connection: Connection, run_id: UUID, test_case_ids: list[UUID]
) -> list[int]:
    """Which of these cases' results wait for the judge (their row ids)."""
    return [row["seq"] for row in await connection.fetch(_PENDING_SEQS, run_id, test_case_ids)]


async def set_judged(connection: Connection, run_id: UUID, rows: Sequence[Sequence[Any]]) -> None:
    """Replace provisional grades: rows of (seq, outcome, graded, pass_fail, score,
    partially_graded, judge_reasoning, check_results, judge_records)."""
    columns = [list(column) for column in zip(*rows, strict=True)]
    columns[7] = as_jsonb_column(columns[7])
    columns[8] = as_jsonb_column(columns[8])
    await connection.execute(_SET_JUDGED, run_id, *columns)


async def results_of_cases(
    executor: Executor, run_id: UUID, test_case_ids: list[UUID]
) -> list[asyncpg.Record]:
    """The stored results of these cases (trial 1: CI mode)."""
    return list(await executor.fetch(_BY_IDS, run_id, test_case_ids))
