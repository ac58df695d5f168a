"""A conversation case from traces: the user turns to script, and the checks each turn offers.

Traces sharing a conversation id are one conversation, a trace a turn: its input the user's
message, its tool calls the agent's during that turn. A single trace whose model was sent the
history holds several user messages: each starts a turn, the assistant's tool requests up to
the next belong to it, and the trace's own tool calls to the last turn (the one it ran).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from agentlasso.domain.checks import Check
from agentlasso.domain.conversations import MAX_SCRIPTED_TURNS, Conversation, ScriptedTurn
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.traces.cases import case_input, suggested_checks


class TurnDraft(msgspec.Struct, frozen=True, kw_only=True):
    """One user turn a conversation case scripts, with what the agent did in it."""

    user: str | dict[str, Any]
    # The tools the agent called in this turn, in the order they started.
    tool_names: tuple[str, ...] = ()
    reply: str | None = None
    # The trace the turn was read from.
    trace_id: str | None = None


def turn_of_trace(
    trace_id: str, trace_input: Any, tool_calls: Sequence[Mapping[str, Any]], reply: str | None
) -> TurnDraft | None:
    """A trace as one turn of its conversation; None when it recorded no input."""
    user = case_input(trace_input)
    if user is None:
        return None
    return TurnDraft(user=user, tool_names=_names(tool_calls), reply=reply, trace_id=trace_id)


def turns_in_messages(
    trace_id: str,
    messages: Sequence[Mapping[str, Any]],
    tool_calls: Sequence[Mapping[str, Any]],
    reply: str | None,
) -> tuple[TurnDraft, ...]:
    """The turns of a trace whose messages hold several user messages (else none)."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "user" and isinstance(content, str) and content.strip():
            turns.append({"user": content, "tool_names": [], "reply": None})
        elif role == "assistant" and turns:
            turns[-1]["tool_names"].extend(str(name) for name in message.get("tool_names") or ())
            if isinstance(content, str) and content:
                turns[-1]["reply"] = content
    if len(turns) < 2:
        return ()
    # The trace ran its last turn: its own calls (tool spans included) and reply are that turn's.
    turns[-1]["tool_names"] = list(_names(tool_calls))
    turns[-1]["reply"] = reply
    return tuple(
        TurnDraft(user=turn["user"], tool_names=tuple(turn["tool_names"]), reply=turn["reply"],
                  trace_id=trace_id)
        for turn in turns[:MAX_SCRIPTED_TURNS]
    )  # fmt: skip


def offered_turn_checks(turns: Sequence[TurnDraft]) -> tuple[tuple[Check, ...], ...]:
    """Each turn's offered checks: a critical tool_called per tool it called, and their order
    when it made several calls (as a single-turn case is offered)."""
    return tuple(suggested_checks(turn.tool_names) for turn in turns)


def conversation_content(
    turns: Sequence[TurnDraft],
    turn_checks: Sequence[Sequence[Check]],
    *,
    checks: tuple[Check, ...] | None = None,
    expected_output: str | None = None,
    description: str | None = None,
) -> TestCaseContent:
    """A conversation case scripting the turns, each with its checks."""
    scripted = tuple(
        ScriptedTurn(user=turn.user, checks=tuple(turn_checks[index]) if index < len(turn_checks)
                     else ())
        for index, turn in enumerate(turns[:MAX_SCRIPTED_TURNS])
    )  # fmt: skip
    return TestCaseContent(
        conversation=Conversation(turns=scripted),
        checks=checks or (),
        expected_output=expected_output,
        description=description,
    )


def _names(tool_calls: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    return tuple(str(call.get("name") or "") for call in tool_calls if call.get("name"))
