"""Trace rules on the wire (contract section 18)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

from agentlasso.domain.checks import MAX_CHECKS, Check
from agentlasso.domain.grades import CheckResult
from agentlasso.domain.stored_text import WITHOUT_NUL_PATTERN
from agentlasso.domain.test_cases import Confidence, EvaluationType
from agentlasso.domain.trace_rules import TraceFilter

RuleName = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=WITHOUT_NUL_PATTERN)]
# At least one: a rule grades traces by its checks (an expected_output adds one more).
RuleChecks = Annotated[list[Check], msgspec.Meta(min_length=1, max_length=MAX_CHECKS)]
SampleRate = Annotated[float, msgspec.Meta(ge=0, le=1)]
BackfillHours = Annotated[int, msgspec.Meta(ge=0, le=168)]
BudgetUsd = Annotated[float, msgspec.Meta(ge=0, le=1_000_000)]


class TraceRuleCreate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A new trace rule: which traces, how many of them, and the checks they must pass."""

    name: RuleName
    filter: TraceFilter = msgspec.field(default_factory=TraceFilter)
    sample_rate: SampleRate = 1.0
    checks: RuleChecks
    expected_output: Annotated[str, msgspec.Meta(min_length=1, max_length=100_000)] | None = None
    evaluation_type: EvaluationType = "BOOLEAN"
    min_confidence: Confidence = 70
    daily_judge_budget_usd: BudgetUsd | None = None
    backfill_hours: BackfillHours = 0


class RuleStats(msgspec.Struct, kw_only=True):
    """What the rule has graded (each trace's latest grade)."""

    evaluated: int
    passed: int
    failed: int
    not_graded: int
    # passed / (passed + failed); None until one is graded.
    pass_rate: float | None
    judge_cost_usd_today: float


class RecentFailure(msgspec.Struct, kw_only=True):
    """A trace the rule failed, and why."""

    trace_id: str
    graded_at: datetime
    judge_reasoning: str


class TraceRule(msgspec.Struct, kw_only=True):
    """A trace rule, with what it has graded."""

    id: str
    name: str
    filter: TraceFilter
    sample_rate: float
    checks: tuple[Check, ...]
    expected_output: str | None
    evaluation_type: EvaluationType
    min_confidence: int
    daily_judge_budget_usd: float | None
    backfill_hours: int
    created_at: datetime
    stats: RuleStats | None = None
    recent_failures: list[RecentFailure] | None = None


class TraceRulePage(msgspec.Struct, kw_only=True):
    """The project's trace rules, newest first."""

    trace_rules: list[TraceRule]


class TraceEvaluation(msgspec.Struct, kw_only=True):
    """A rule's latest grade of a trace."""

    rule_id: str
    rule_name: str
    outcome: str
    graded: bool
    pass_fail: bool
    score: float | None
    judge_reasoning: str
    check_results: tuple[CheckResult, ...]
    # The trace's span count when graded, and how often the rule graded it (late spans).
    span_count: int
    times_graded: int
    graded_at: datetime
    judge_cost_usd: float
