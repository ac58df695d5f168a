"""A graded case as a case_results row, in either mode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from app.db.case_results import RESULT_COLUMNS
from app.domain.results import CaseResult, CheckResult, UngradedItem


def outcome_of(result: CaseResult) -> str:
    """passed, failed or not_graded."""
    if not result.graded:
        return "not_graded"
    return "passed" if result.pass_fail else "failed"


def result_row(
    run_id: UUID,
    test_case_id: UUID,
    trial: int,
    revision_id: UUID,
    result: CaseResult,
    *,
    actual_output: Any,
    actual_tool_calls: Any,
    agent_error: str | None,
    agent_latency_ms: int | None = None,
    agent_attempts: Any = None,
    judge_pending: bool = False,
) -> tuple[Any, ...]:
    """The row in case_results.RESULT_COLUMNS order; UNSET output or calls were not reported."""
    output_reported = actual_output is not msgspec.UNSET
    calls_reported = actual_tool_calls is not msgspec.UNSET
    return (
        run_id, test_case_id, trial, revision_id, outcome_of(result), result.graded,
        result.pass_fail, not result.check_results, agent_error is not None, result.score,
        result.partially_graded, result.judge_reasoning, result.check_results,
        result.ungraded_items, output_reported, actual_output if output_reported else None,
        calls_reported, actual_tool_calls if calls_reported else None, agent_latency_ms,
        agent_attempts, agent_error, judge_pending, None,
    )  # fmt: skip


def counted(rows: Sequence[Any]) -> tuple[int, ...]:
    """(done, graded, passed, errored, no_checks, judge_pending) these result rows count for.

    Rows are anything indexed by column name: database records, or row_flags() of new rows.
    """
    return (
        len(rows),
        sum(bool(row["graded"]) for row in rows),
        sum(bool(row["graded"] and row["pass_fail"]) for row in rows),
        sum(bool(row["errored"]) for row in rows),
        sum(bool(row["no_checks"]) for row in rows),
        sum(bool(row["judge_pending"]) for row in rows),
    )


def counter_delta(added: Sequence[Any], removed: Sequence[Any]) -> tuple[int, ...]:
    """What a run's counters move by when `added` rows replace `removed` ones."""
    return tuple(new - old for new, old in zip(counted(added), counted(removed), strict=True))


def row_flags(row: Sequence[Any]) -> dict[str, Any]:
    """The counted flags of a row in RESULT_COLUMNS order."""
    return {name: row[RESULT_COLUMNS.index(name)] for name in _FLAGS}


_FLAGS = ("graded", "pass_fail", "errored", "no_checks", "judge_pending")


def case_result_of(row: asyncpg.Record) -> CaseResult:
    """A stored result row as the grading engine's CaseResult."""
    return CaseResult(
        score=row["score"],
        pass_fail=row["pass_fail"],
        graded=row["graded"],
        partially_graded=row["partially_graded"],
        judge_reasoning=row["judge_reasoning"],
        # jsonb does not keep key order: decoding restores the documented shape.
        check_results=msgspec.convert(row["check_results"], tuple[CheckResult, ...]),
        ungraded_items=msgspec.convert(row["ungraded_items"], tuple[UngradedItem, ...]),
    )
