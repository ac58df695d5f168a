"""The pure grading engine: checks, case rules and the run gate. No I/O, clock or randomness."""

from __future__ import annotations

from agentlasso.domain.grades import (
    CaseResult,
    CheckResult,
    Gate,
    JudgeVerdict,
    Observation,
    RunCounts,
    ToolCall,
    UngradedItem,
)
from agentlasso.grading.by_kind import Answer, grade_answer, verdicts_needed
from agentlasso.grading.case import grade_case
from agentlasso.grading.gate import decide_gate, run_gate, settled_status
from agentlasso.grading.judge_checks import EXPECTATION_ID, JudgeRequest, judge_requests
from agentlasso.grading.observations import observation_from_wire
from agentlasso.grading.patterns import regex_compile_error
from agentlasso.grading.plan import plan_case
from agentlasso.grading.tool_calls import normalise_tool_calls

__all__ = [
    "EXPECTATION_ID",
    "Answer",
    "CaseResult",
    "CheckResult",
    "Gate",
    "JudgeRequest",
    "JudgeVerdict",
    "Observation",
    "RunCounts",
    "ToolCall",
    "UngradedItem",
    "decide_gate",
    "grade_answer",
    "grade_case",
    "judge_requests",
    "normalise_tool_calls",
    "observation_from_wire",
    "plan_case",
    "regex_compile_error",
    "run_gate",
    "settled_status",
    "verdicts_needed",
]
