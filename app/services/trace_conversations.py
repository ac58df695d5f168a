"""Conversations from traces: the traces sharing a conversation id, and a conversation case
made from them (or from one trace whose input holds several user messages)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import msgspec

from agentlasso.db import trace_conversations as rows
from agentlasso.db.traces import TraceRow
from agentlasso.domain.checks import Check
from agentlasso.domain.conversations import MAX_SCRIPTED_TURNS
from agentlasso.domain.test_cases import ContentWarning, TestCase
from agentlasso.errors import Conflict, NotFound
from agentlasso.services.platform import Platform
from agentlasso.services.test_cases import create_test_case
from agentlasso.traces.conversation_cases import (
    TurnDraft,
    conversation_content,
    offered_turn_checks,
    turn_of_trace,
    turns_in_messages,
)
from agentlasso.traces.summary import CONVERSATION_ID_MAX_CHARS

NO_CONVERSATION = "No traces with this conversation id in your project (or they have expired)."
NO_TURNS = "No trace of this conversation recorded an input, so no case can start from it."


class ConversationView(msgspec.Struct, frozen=True, kw_only=True):
    """A conversation's traces, earliest first, the turns they make, and the cases from them."""

    conversation_id: str
    traces: list[TraceRow]
    # More traces than a case scripts turns: the first MAX_SCRIPTED_TURNS are shown.
    more: bool
    turns: tuple[TurnDraft, ...]
    cases: list[tuple[UUID, UUID, str]]


async def get_conversation(
    platform: Platform, project_id: UUID, conversation_id: str
) -> ConversationView:
    """The conversation's traces in time order; NotFound when the project has none of it."""
    # U+0000 cannot be stored (so no trace has it), and PostgreSQL refuses it in a query.
    if not 0 < len(conversation_id) <= CONVERSATION_ID_MAX_CHARS or "\x00" in conversation_id:
        raise NotFound(NO_CONVERSATION)
    traces, more = await rows.conversation_traces(
        platform.pool, project_id, conversation_id, MAX_SCRIPTED_TURNS
    )
    if not traces:
        raise NotFound(NO_CONVERSATION)
    ids = [trace.trace_id for trace in traces]
    cases = await rows.cases_from_traces(platform.pool, project_id, ids)
    return ConversationView(
        conversation_id=conversation_id,
        traces=traces,
        more=more,
        turns=conversation_turns(traces),
        cases=cases,
    )


def conversation_turns(traces: Sequence[TraceRow]) -> tuple[TurnDraft, ...]:
    """A turn per trace that recorded an input, in the traces' order."""
    turns = (
        turn_of_trace(trace.trace_id, trace.input, trace.tool_calls, trace.output)
        for trace in traces
    )
    return tuple(turn for turn in turns if turn is not None)


def trace_turns(trace: TraceRow) -> tuple[TurnDraft, ...]:
    """The turns of one trace whose input holds several user messages; none otherwise."""
    return turns_in_messages(trace.trace_id, trace.messages, trace.tool_calls, trace.output)


async def position_in_conversation(
    platform: Platform, project_id: UUID, trace: TraceRow
) -> tuple[int, int] | None:
    """Which turn of its conversation the trace is, and of how many (of the first 50)."""
    if trace.conversation_id is None:
        return None
    ids = await rows.conversation_trace_ids(
        platform.pool, project_id, trace.conversation_id, MAX_SCRIPTED_TURNS
    )
    if trace.trace_id not in ids:
        return None
    return ids.index(trace.trace_id) + 1, len(ids)


async def make_conversation_case(
    platform: Platform,
    project_id: UUID,
    dataset_id: UUID,
    turns: Sequence[TurnDraft],
    *,
    description: str,
    turn_checks: Sequence[Sequence[Check]] | None = None,
    checks: tuple[Check, ...] | None = None,
    expected_output: str | None = None,
) -> tuple[TestCase, list[ContentWarning]]:
    """A conversation case scripting the turns, linked to the first turn's trace.

    Unless turn checks or case checks are given, each turn offers its own tool checks.
    """
    if not turns:
        raise Conflict(NO_TURNS)
    if turn_checks is None:
        turn_checks = offered_turn_checks(turns) if checks is None else ()
    content = conversation_content(
        turns, turn_checks, checks=checks, expected_output=expected_output,
        description=description[:500],
    )  # fmt: skip
    return await create_test_case(
        platform, project_id, dataset_id, content, source_trace_id=turns[0].trace_id
    )


async def make_case_from_conversation(
    platform: Platform,
    project_id: UUID,
    view: ConversationView,
    dataset_id: UUID,
    *,
    turn_checks: Sequence[Sequence[Check]] | None = None,
    checks: tuple[Check, ...] | None = None,
    expected_output: str | None = None,
) -> tuple[TestCase, list[ContentWarning]]:
    """A conversation case of the conversation's turns (one read with get_conversation)."""
    return await make_conversation_case(
        platform, project_id, dataset_id, view.turns, turn_checks=turn_checks, checks=checks,
        expected_output=expected_output, description=f"From conversation {view.conversation_id}",
    )  # fmt: skip
