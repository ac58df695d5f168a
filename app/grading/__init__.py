"""The pure grading engine: checks, case rules and the run gate. No I/O, clock or randomness."""

from __future__ import annotations

from app.domain.results import (
    CaseResult,
    CheckResult,
    Gate,
    JudgeVerdict,
    Observation,
    RunCounts,
    ToolCall,
    UngradedItem,
)
from app.grading.case import grade_case
from app.grading.gate import decide_gate, run_gate, settled_status
from app.grading.judge_checks import EXPECTATION_ID, JudgeRequest, judge_requests
from app.grading.patterns import regex_compile_error
from app.grading.plan import plan_case
from app.grading.tool_calls import normalise_tool_calls
from app.grading.wire import observation_from_wire

__all__ = [
    "EXPECTATION_ID",
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
    "grade_case",
    "judge_requests",
    "normalise_tool_calls",
    "observation_from_wire",
    "plan_case",
    "regex_compile_error",
    "run_gate",
    "settled_status",
]
