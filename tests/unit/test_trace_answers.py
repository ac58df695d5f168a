"""What a trace rule grades: one trace, or a conversation's traces as one conversation."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import msgspec

from agentlasso.domain.trace_rules import TraceFilter, TraceRule, TraceToGrade
from agentlasso.grading.by_kind import grade_answer
from agentlasso.schemas.trace_rules import TraceRuleCreate
from agentlasso.services.trace_answers import conversation_answer, trace_answer
from agentlasso.services.trace_rules import rule_content

CHECKS: list[dict[str, Any]] = [
    {"type": "tool_order", "tools": ["orders.lookup", "orders.refund"]},
    {"type": "output_contains", "value": "Refunded"},
]


def rule() -> TraceRule:
    posted = msgspec.convert({"name": "r", "checks": CHECKS}, TraceRuleCreate)
    return TraceRule(
        id=uuid.uuid4(), project_id=uuid.uuid4(), name="r", filter=TraceFilter(), sample_rate=1,
        content=rule_content(posted), daily_judge_budget_usd=None, backfill_hours=0,
        created_at=datetime.now(UTC),
    )  # fmt: skip


def turn(
    trace_id: str, said: str, tool: str, replied: str, error: str | None = None
) -> TraceToGrade:
    return TraceToGrade(
        trace_id=trace_id, input=said, output=replied,
        tool_calls=[{"name": tool, "arguments": {"order_id": 77}}], error=error, duration_ms=400,
        conversation_id="chat-77",
    )  # fmt: skip


TURNS = [
    turn("a" * 32, "Refund order 77", "orders.lookup", "Let me look."),
    turn("b" * 32, "Yes, refund it", "orders.refund", "Refunded.", error="slow"),
]


def test_a_conversation_is_graded_on_every_turns_calls_and_its_final_reply() -> None:
    answer = conversation_answer(rule(), TURNS, span_count=9)
    result = grade_answer(answer.content, answer.answer, {})
    assert result.pass_fail, result.judge_reasoning
    assert (answer.trace_id, answer.span_count, answer.duration_ms) == ("b" * 32, 9, 800)
    assert answer.trace_error
    assert answer.observation().actual_output == "Refunded."


def test_the_last_turn_alone_misses_the_lookup() -> None:
    answer = trace_answer(rule(), TURNS[1], span_count=4)
    result = grade_answer(answer.content, answer.answer, {})
    assert not result.pass_fail
    order = next(check for check in result.check_results if check.type == "tool_order")
    assert order.status == "failed" and "orders.lookup" in order.detail
    assert answer.observation() is answer.answer, "the judge reads the trace's own reply"
