"""Trace rules (contract section 18): which production traces a rule grades, and with what."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import msgspec

from agentlasso.domain.grades import CaseResult
from agentlasso.domain.stored_text import WITHOUT_NUL_PATTERN
from agentlasso.domain.test_cases import TestCaseContent

# No U+0000 (PostgreSQL text cannot hold it): refused where it is, naming the field.
FilterText = Annotated[str, msgspec.Meta(min_length=1, max_length=512, pattern=WITHOUT_NUL_PATTERN)]
AttributeKey = Annotated[
    str, msgspec.Meta(min_length=1, max_length=256, pattern=WITHOUT_NUL_PATTERN)
]
AttributeValue = Annotated[str, msgspec.Meta(max_length=1024, pattern=WITHOUT_NUL_PATTERN)]
MAX_FILTER_ATTRIBUTES = 20
# The sample is drawn from 2**64 buckets of the trace id's hash.
_BUCKETS = 2**64


class TraceFilter(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """Which traces a rule grades: every part given must match (none given: every trace)."""

    # The trace's name (its root span's), exactly.
    name: FilterText | None = None
    # A tool the trace called.
    tool: FilterText | None = None
    # Only traces that recorded an error.
    errors_only: bool = False
    # Attributes one of the trace's spans (or its resource) carries, each with this value.
    attributes: Annotated[
        dict[AttributeKey, AttributeValue], msgspec.Meta(max_length=MAX_FILTER_ATTRIBUTES)
    ] = msgspec.field(default_factory=dict)


class TraceRule(msgspec.Struct, frozen=True, kw_only=True):
    """A rule as stored: what it grades and how."""

    id: UUID
    project_id: UUID
    name: str
    filter: TraceFilter
    sample_rate: float
    # The checks and the expectation, as a case holds them (ids assigned).
    content: TestCaseContent
    daily_judge_budget_usd: float | None
    backfill_hours: int
    created_at: datetime


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A trace that went quiet, with what a filter reads of it without its spans."""

    trace_id: str
    updated_at: datetime
    span_count: int
    name: str
    tool_names: tuple[str, ...]
    has_error: bool
    # The conversation the trace is a turn of: a rule grades the conversation as one.
    conversation_id: str | None = None


class TraceToGrade(msgspec.Struct, frozen=True, kw_only=True):
    """What grading reads of a trace: its input, reply and tool calls, as the summary has them."""

    trace_id: str
    input: Any
    output: str | None
    tool_calls: list[dict[str, Any]]
    error: str | None
    duration_ms: int
    conversation_id: str | None = None


class Evaluation(msgspec.Struct, frozen=True, kw_only=True):
    """A rule's latest grade of one trace."""

    rule_id: UUID
    rule_name: str
    trace_id: str
    span_count: int
    times_graded: int
    graded_at: datetime
    result: CaseResult
    judge_cost_usd: float


def sampled(trace_id: str, rate: float) -> bool:
    """Whether a rule sampling at `rate` grades this trace: by a hash of its id, so the traces a
    lower rate takes are a subset of those a higher one takes, on every worker, every time."""
    if rate >= 1:
        return True
    if rate <= 0:
        return False
    digest = hashlib.blake2b(trace_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < rate * _BUCKETS


def passes_filter(rule_filter: TraceFilter, candidate: Candidate) -> bool:
    """Whether the trace matches the filter's parts that need no span (the attributes are
    matched against the spans by the database)."""
    if rule_filter.name is not None and candidate.name != rule_filter.name:
        return False
    if rule_filter.tool is not None and rule_filter.tool not in candidate.tool_names:
        return False
    return not rule_filter.errors_only or candidate.has_error


def chosen(rule: TraceRule, candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates the rule grades, before its attribute filter: a conversation's turns are
    sampled by the conversation's id, so that it is graded whole or not at all."""
    return [
        candidate
        for candidate in candidates
        if passes_filter(rule.filter, candidate)
        and sampled(candidate.conversation_id or candidate.trace_id, rule.sample_rate)
    ]


def budget_spent_reason(budget_usd: float) -> str:
    """Why a judge check of a rule whose budget is spent is not graded."""
    return (
        f"The rule's daily judge budget (${budget_usd:.2f}) is spent for today; judge checks "
        "are graded again from 00:00 UTC."
    )
