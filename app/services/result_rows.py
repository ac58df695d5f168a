"""A graded case as a case_results row, in either mode."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from app.domain.results import CaseResult


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
