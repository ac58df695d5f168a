"""Conversations from traces, the pure part: which conversation a trace's spans name, and the
turns and offered checks a conversation case starts with."""

from __future__ import annotations

from typing import Any

import pytest

from agentlasso.domain.checks import ToolCalled, ToolOrder
from agentlasso.traces.conversation_cases import (
    TurnDraft,
    conversation_content,
    offered_turn_checks,
    turn_of_trace,
    turns_in_messages,
)
from agentlasso.traces.spans import Span
from agentlasso.traces.summary import summarise
from agentlasso.traces.summary_merge import merged

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def span(span_id: str, start_ns: int, attributes: dict[str, Any], **fields: Any) -> Span:
    return Span(
        trace_id=TRACE_ID, span_id=span_id, name="step", start_ns=start_ns,
        end_ns=start_ns + 10, attributes=attributes, **fields,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("spans", "expected"),
    [
        ([span("a" * 16, 1, {"gen_ai.conversation.id": "c-1"})], "c-1"),
        ([span("a" * 16, 1, {"session.id": "s-9"})], "s-9"),
        ([span("a" * 16, 1, {}, resource={"session.id": "from-resource"})], "from-resource"),
        # GenAI's attribute wins over OpenInference's, wherever each is.
        (
            [
                span("a" * 16, 1, {"session.id": "s"}),
                span("b" * 16, 2, {"gen_ai.conversation.id": "g"}),
            ],
            "g",
        ),
        ([span("a" * 16, 1, {"gen_ai.conversation.id": 42})], "42"),
        ([span("a" * 16, 1, {"gen_ai.conversation.id": "  "})], None),
        ([span("a" * 16, 1, {"gen_ai.conversation.id": True})], None),
        ([span("a" * 16, 1, {})], None),
    ],
)
def test_the_conversation_id_comes_from_the_spans(spans: list[Span], expected: str | None) -> None:
    assert summarise(spans).conversation_id == expected


def test_a_long_conversation_id_is_cut_and_a_later_part_of_the_trace_keeps_it() -> None:
    first = summarise([span("a" * 16, 1, {"gen_ai.conversation.id": "x" * 300})])
    assert first.conversation_id == "x" * 256
    later = summarise([span("b" * 16, 5, {})])
    assert merged(first, later).conversation_id == "x" * 256
    assert merged(later, first).conversation_id == "x" * 256


def test_a_trace_of_one_turn_is_one_turn_and_one_without_input_none() -> None:
    turn = turn_of_trace(TRACE_ID, "Where is 4417?", [{"name": "lookup"}], "Shipped.")
    assert turn == TurnDraft(user="Where is 4417?", tool_names=("lookup",), reply="Shipped.",
                             trace_id=TRACE_ID)  # fmt: skip
    assert turn_of_trace(TRACE_ID, None, [], None) is None
    assert turn_of_trace(TRACE_ID, ["a", "list"], [], None) == TurnDraft(
        user={"input": ["a", "list"]}, trace_id=TRACE_ID
    )


def test_the_messages_of_a_trace_sent_the_history_make_a_turn_per_user_message() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where is 4417?"},
        {"role": "assistant", "content": "", "tool_names": ["lookup"]},
        {"role": "tool", "content": "shipped"},
        {"role": "assistant", "content": "It shipped."},
        {"role": "user", "content": "  "},  # no text: no turn
        {"role": "user", "content": "Send it elsewhere."},
        {"role": "assistant", "content": "", "tool_names": ["lookup"]},
    ]
    turns = turns_in_messages(TRACE_ID, messages, [{"name": "lookup"}, {"name": "move"}], "Done.")
    assert [(t.user, t.tool_names, t.reply) for t in turns] == [
        ("Where is 4417?", ("lookup",), "It shipped."),
        # the trace's own calls are its last turn's, not the requests in its history
        ("Send it elsewhere.", ("lookup", "move"), "Done."),
    ]
    one_user = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    assert turns_in_messages(TRACE_ID, one_user, [], "Hello") == ()


def test_each_turn_offers_its_own_tool_checks_and_the_case_scripts_the_turns() -> None:
    turns = [
        TurnDraft(user="one", tool_names=("lookup",)),
        TurnDraft(user="two", tool_names=("lookup", "move")),
        TurnDraft(user="three"),
    ]
    offered = offered_turn_checks(turns)
    assert offered == (
        (ToolCalled(tool="lookup"),),
        (ToolCalled(tool="lookup"), ToolCalled(tool="move"), ToolOrder(tools=("lookup", "move"))),
        (),
    )
    content = conversation_content(turns, offered, description="From conversation c-1")
    assert content.input is None and content.conversation is not None
    assert [turn.user for turn in content.conversation.turns] == ["one", "two", "three"]
    assert [turn.checks for turn in content.conversation.turns] == list(offered)
    assert content.checks == ()
    bare = conversation_content(turns, [], checks=(ToolCalled(tool="move"),))
    assert bare.conversation is not None
    assert all(turn.checks == () for turn in bare.conversation.turns)
    assert bare.checks == (ToolCalled(tool="move"),)
