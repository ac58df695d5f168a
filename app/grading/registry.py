"""The one place that says which function grades which check class, and what it needs.

The check classes themselves (app/domain/checks.py) say their wire names; a grader's name is
its class's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from agentlasso.domain.checks import (
    Check,
    CheckType,
    LatencyBelow,
    LlmJudge,
    MaxToolCalls,
    OutputContains,
    OutputEquals,
    OutputMatchesSchema,
    OutputNotContains,
    OutputValidJson,
    ToolArgsValid,
    ToolCalled,
    ToolNotCalled,
    ToolOrder,
    type_of,
)
from agentlasso.domain.grades import CheckResult
from agentlasso.grading.context import GradingContext
from agentlasso.grading.equality_checks import grade_output_equals
from agentlasso.grading.json_checks import grade_output_valid_json
from agentlasso.grading.judge_checks import grade_llm_judge
from agentlasso.grading.latency_checks import grade_latency_below
from agentlasso.grading.schema_checks import grade_output_matches_schema, grade_tool_args_valid
from agentlasso.grading.text_checks import grade_output_contains, grade_output_not_contains
from agentlasso.grading.tool_checks import (
    grade_max_tool_calls,
    grade_tool_called,
    grade_tool_not_called,
    grade_tool_order,
)

Need = Literal["reply", "tool_calls", "latency"]
GradeFunction = Callable[[Any, GradingContext], CheckResult]


class Grader(NamedTuple):
    """How one check type is graded: its name, what it needs, and the function."""

    check_type: CheckType
    needs: Need
    grade: GradeFunction


def grader(check_class: type[Check], needs: Need, grade: GradeFunction) -> Grader:
    """The grader of a check class, named by the class's wire name."""
    return Grader(type_of(check_class), needs, grade)


# Keyed by Struct class: one dict lookup per check on the hot path.
GRADERS: Mapping[type, Grader] = {
    ToolCalled: grader(ToolCalled, "tool_calls", grade_tool_called),
    ToolNotCalled: grader(ToolNotCalled, "tool_calls", grade_tool_not_called),
    ToolOrder: grader(ToolOrder, "tool_calls", grade_tool_order),
    MaxToolCalls: grader(MaxToolCalls, "tool_calls", grade_max_tool_calls),
    ToolArgsValid: grader(ToolArgsValid, "tool_calls", grade_tool_args_valid),
    OutputContains: grader(OutputContains, "reply", grade_output_contains),
    OutputNotContains: grader(OutputNotContains, "reply", grade_output_not_contains),
    OutputEquals: grader(OutputEquals, "reply", grade_output_equals),
    OutputValidJson: grader(OutputValidJson, "reply", grade_output_valid_json),
    OutputMatchesSchema: grader(OutputMatchesSchema, "reply", grade_output_matches_schema),
    LatencyBelow: grader(LatencyBelow, "latency", grade_latency_below),
    LlmJudge: grader(LlmJudge, "reply", grade_llm_judge),
}
