"""The one place that says which function grades which check type, and what it needs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from app.domain.checks import (
    CheckType,
    LlmJudge,
    OutputContains,
    OutputNotContains,
    OutputValidJson,
    ToolCalled,
    ToolNotCalled,
    ToolOrder,
)
from app.domain.results import CheckResult
from app.grading.context import GradingContext
from app.grading.json_checks import grade_output_valid_json
from app.grading.judge_checks import grade_llm_judge
from app.grading.text_checks import grade_output_contains, grade_output_not_contains
from app.grading.tool_checks import grade_tool_called, grade_tool_not_called, grade_tool_order

Need = Literal["reply", "tool_calls"]


class Grader(NamedTuple):
    """How one check type is graded: its name, what it needs, and the function."""

    check_type: CheckType
    needs: Need
    grade: Callable[[Any, GradingContext], CheckResult]


# Keyed by Struct class: one dict lookup per check on the hot path.
GRADERS: Mapping[type, Grader] = {
    ToolCalled: Grader("tool_called", "tool_calls", grade_tool_called),
    ToolNotCalled: Grader("tool_not_called", "tool_calls", grade_tool_not_called),
    ToolOrder: Grader("tool_order", "tool_calls", grade_tool_order),
    OutputContains: Grader("output_contains", "reply", grade_output_contains),
    OutputNotContains: Grader("output_not_contains", "reply", grade_output_not_contains),
    OutputValidJson: Grader("output_valid_json", "reply", grade_output_valid_json),
    LlmJudge: Grader("llm_judge", "reply", grade_llm_judge),
}
