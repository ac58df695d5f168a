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
)

# Removing the results a batch replaces, returning what they contributed to the counters.
_DELETE_REPLACED = """
DELETE FROM case_results
WHERE run_id = $1 AND trial = $2 AND test_case_id = ANY($3::uuid[])
RETURNING graded, pass_fail, errored, no_checks
"""

# Each row once: a chunk done twice (a re-run after a crash) inserts nothing the second time,
# and RETURNING names exactly the rows that count.
_INSERT_NEW = """
INSERT INTO case_results (run_id, test_case_id, trial, revision_id, outcome, graded, pass_fail,
    no_checks, errored, score, partially_graded, judge_reasoning, check_results, ungraded_items,
    output_reported, actual_output, tool_calls_reported, actual_tool_calls, agent_latency_ms,
    agent_attempts, agent_error)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::uuid[], $5::text[], $6::bool[],
    $7::bool[], $8::bool[], $9::bool[], $10::float8[], $11::bool[], $12::text[], $13::jsonb[],
    $14::jsonb[], $15::bool[], $16::jsonb[], $17::bool[], $18::jsonb[], $19::int[], $20::jsonb[],
    $21::text[])
ON CONFLICT (run_id, test_case_id, trial) DO NOTHING
RETURNING graded, pass_fail, errored, no_checks
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
                 "agent_attempts")
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
