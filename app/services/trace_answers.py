"""What a trace rule grades (contract section 18): one trace as a single-turn case's answer, or
the traces of one conversation as a conversation played out, a trace a turn."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from agentlasso.domain.conversations import (
    Conversation,
    PlayedConversation,
    ScriptedTurn,
    TurnRecord,
)
from agentlasso.domain.grades import Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.domain.trace_rules import TraceRule, TraceToGrade
from agentlasso.grading.by_kind import Answer
from agentlasso.grading.conversation import whole_observation
from agentlasso.grading.observations import observation_from_wire
from agentlasso.traces.cases import case_input


class RuleAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One thing a rule grades: the trace its grade is kept on and that trace's version, what
    it is graded against, and what the agent did."""

    trace_id: str
    span_count: int
    content: TestCaseContent
    answer: Answer
    trace_error: bool
    duration_ms: int

    def observation(self) -> Observation:
        """What the judge is shown: a conversation's whole transcript and final reply."""
        answer = self.answer
        return answer if isinstance(answer, Observation) else whole_observation(answer)


def trace_answer(rule: TraceRule, trace: TraceToGrade, span_count: int) -> RuleAnswer:
    """A single trace: the rule's checks with the trace's input as the case's (the judge reads
    it), on its reply (when it recorded one), its tool calls and its duration."""
    return RuleAnswer(
        trace_id=trace.trace_id, span_count=span_count,
        content=msgspec.structs.replace(rule.content, input=case_input(trace.input) or ""),
        answer=observation_from_wire(
            trace.output, trace.tool_calls,
            output_reported=trace.output is not None, latency_ms=trace.duration_ms,
        ),
        trace_error=trace.error is not None, duration_ms=trace.duration_ms,
    )  # fmt: skip


def conversation_answer(
    rule: TraceRule, turns: Sequence[TraceToGrade], span_count: int
) -> RuleAnswer:
    """A conversation's traces, earliest first, as the conversation played: each trace's input
    a user turn, its reply and tool calls the agent's in that turn. The rule's checks are the
    conversation's own (on every call of every turn and the final reply), as a case's own
    checks are; the grade is kept on the latest trace."""
    conversation = Conversation(
        turns=tuple(ScriptedTurn(user=case_input(trace.input) or "") for trace in turns)
    )
    played = PlayedConversation(
        turns=tuple(
            TurnRecord(
                turn=number,
                user=case_input(trace.input) or "",
                actual_output=trace.output,
                actual_tool_calls=trace.tool_calls,
                latency_ms=trace.duration_ms,
            )
            for number, trace in enumerate(turns, start=1)
        ),
        ended_by="script",
    )
    last = turns[-1]
    return RuleAnswer(
        trace_id=last.trace_id, span_count=span_count,
        content=msgspec.structs.replace(rule.content, input=None, conversation=conversation),
        answer=played, trace_error=any(trace.error is not None for trace in turns),
        duration_ms=sum(trace.duration_ms for trace in turns),
    )  # fmt: skip
