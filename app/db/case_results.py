"""Case results: one row per (run, test case, trial)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg

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


async def list_results(
    executor: Executor,
    run_id: UUID,
    after_seq: int,
    outcome: str | None,
    limit: int,
) -> list[asyncpg.Record]:
    """A page of a run's results in the order they arrived."""
    return list(await executor.fetch(_PAGE, run_id, after_seq, outcome, limit))
