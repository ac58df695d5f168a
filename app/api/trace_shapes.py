"""Traces' API shapes: a trace, its spans, a page of them, a conversation, and a case from them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from agentlasso.db.traces import TraceRow
from agentlasso.domain.checks import WrittenChecks
from agentlasso.schemas.test_cases import TestCase
from agentlasso.schemas.trace_rules import TraceEvaluation
from agentlasso.services.trace_conversations import ConversationView
from agentlasso.traces.conversation_cases import TurnDraft
from agentlasso.traces.spans import Span


class ToolCall(msgspec.Struct, kw_only=True):
    """A tool call of a trace, in the order the calls started."""

    name: str
    arguments: Any = None
    result: Any = None
    error: str | None = None


class TraceUsage(msgspec.Struct, kw_only=True):
    """Tokens of the trace's model calls."""

    input_tokens: int
    output_tokens: int


class SpanOut(msgspec.Struct, kw_only=True):
    """A span as it came, every attribute kept."""

    span_id: str
    parent_span_id: str | None
    name: str
    start_time_unix_nano: int
    end_time_unix_nano: int
    status_code: Literal["unset", "ok", "error"]
    status_message: str
    attributes: dict[str, Any]
    events: list[dict[str, Any]]
    resource: dict[str, Any]


class Trace(msgspec.Struct, kw_only=True):
    """One conversation with the agent, as its spans tell it."""

    trace_id: str
    name: str
    input: Any
    output: str | None
    tool_calls: list[ToolCall]
    started_at: datetime
    duration_ms: int
    model: str | None
    usage: TraceUsage | None
    error: str | None
    span_count: int
    # The conversation the trace is a turn of (its spans' gen_ai.conversation.id or session.id).
    conversation_id: str | None = None
    # What the summary cut to stay small, in words (each cut text also ends saying so).
    cuts: list[str] = []
    # Only on a single trace (`GET /traces/{trace_id}`): its spans and the cases made from it.
    spans: list[SpanOut] | msgspec.UnsetType = msgspec.UNSET
    test_case_ids: list[str] | msgspec.UnsetType = msgspec.UNSET
    # Only on a single trace: each trace rule's latest grade of it (contract section 18).
    evaluations: list[TraceEvaluation] | msgspec.UnsetType = msgspec.UNSET


class TracePage(msgspec.Struct, kw_only=True):
    """A page of traces, newest first."""

    items: list[Trace]
    next_cursor: str | None


class TestCaseFromTrace(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Where the new case goes, and optionally its checks and expected output."""

    __test__ = False

    dataset_id: str
    # Absent: a critical tool_called check per recorded tool, and their order when several;
    # for a conversation case, those of each turn's calls on that turn. Given (even empty):
    # the case's own checks, and no turn checks.
    checks: WrittenChecks | None = None
    expected_output: Annotated[str, msgspec.Meta(max_length=100_000)] | None = None


class CaseSuggestions(msgspec.Struct, kw_only=True):
    """What the case could also take from the trace."""

    expected_output: str | None


class TestCaseFromTraceOut(TestCase, kw_only=True):
    """The new test case, with what the trace suggests for it."""

    __test__ = False

    suggestions: CaseSuggestions | msgspec.UnsetType = msgspec.UNSET


_STATUS_NAMES: dict[int, Literal["unset", "ok", "error"]] = {0: "unset", 1: "ok", 2: "error"}


def trace_out(row: TraceRow) -> Trace:
    """The API shape of a trace's summary."""
    usage = row.usage or None
    return Trace(
        trace_id=row.trace_id,
        name=row.name,
        input=row.input,
        output=row.output,
        tool_calls=[
            ToolCall(
                name=str(call.get("name") or ""),
                arguments=call.get("arguments"),
                result=call.get("result"),
                error=call.get("error"),
            )
            for call in row.tool_calls
        ],
        started_at=row.started_at,
        duration_ms=row.duration_ms,
        model=row.model,
        usage=None
        if usage is None
        else TraceUsage(
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
        ),
        error=row.error,
        span_count=row.span_count,
        conversation_id=row.conversation_id,
        cuts=list(row.cuts),
    )


def span_out(span: Span) -> SpanOut:
    """The API shape of a stored span."""
    return SpanOut(
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=span.name,
        start_time_unix_nano=span.start_ns,
        end_time_unix_nano=span.end_ns,
        status_code=_STATUS_NAMES.get(span.status_code, "unset"),
        status_message=span.status_message,
        attributes=span.attributes,
        events=[msgspec.to_builtins(event) for event in span.events],
        resource=span.resource,
    )


class ConversationTurn(msgspec.Struct, kw_only=True):
    """One user turn of a conversation, as a case from it scripts it."""

    turn: int
    user: Any
    # The tools the agent called in the turn, in the order they started.
    tool_calls: list[str]
    reply: str | None
    trace_id: str | None


class TraceConversation(msgspec.Struct, kw_only=True):
    """The traces sharing one conversation id, earliest first, and the turns they make."""

    conversation_id: str
    traces: list[Trace]
    turns: list[ConversationTurn]
    # More traces than a case scripts turns (50): the first 50 are listed.
    more: bool
    test_case_ids: list[str]


def conversation_out(view: ConversationView) -> TraceConversation:
    """The API shape of a conversation read from its traces."""
    return TraceConversation(
        conversation_id=view.conversation_id,
        traces=[trace_out(trace) for trace in view.traces],
        turns=[_turn_out(number, turn) for number, turn in enumerate(view.turns, start=1)],
        more=view.more,
        test_case_ids=[str(case_id) for case_id, _, _ in view.cases],
    )


def _turn_out(number: int, turn: TurnDraft) -> ConversationTurn:
    return ConversationTurn(
        turn=number,
        user=turn.user,
        tool_calls=list(turn.tool_names),
        reply=turn.reply,
        trace_id=turn.trace_id,
    )
