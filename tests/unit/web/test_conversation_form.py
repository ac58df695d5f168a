"""A conversation case in the rubric editor's form and back, and a pasted transcript read as
the turns a run would have played."""

from __future__ import annotations

import json

import pytest

from agentlasso.domain.checks import OutputContains, ToolCalled, ToolNotCalled
from agentlasso.domain.conversations import Conversation, ScriptedTurn, SimulatedUser
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.errors import InvalidInput
from agentlasso.web import case_form
from agentlasso.web.transcripts import played_from_paste

CONVERSATION = TestCaseContent(
    conversation=Conversation(
        turns=(
            ScriptedTurn(user="Refund order 1234", checks=(ToolCalled(id="a", tool="lookup"),)),
            ScriptedTurn(user={"text": "It broke", "photo": True}),
            ScriptedTurn(user="When?", checks=(OutputContains(id="b", value="days"),)),
        ),
        simulated_user=SimulatedUser(persona="Hurried", goal="A date", max_turns=3, opening="Hi"),
    ),
    checks=(ToolNotCalled(id="c", tool="orders.cancel"),),
    evaluation_type="BOOLEAN",
)  # fmt: skip


def test_a_conversation_round_trips_through_the_form() -> None:
    form = case_form.from_content(CONVERSATION)
    assert form.conversation is not None
    assert [turn.format for turn in form.conversation.turns] == ["text", "json", "text"]
    back, errors = case_form.to_content(form)
    assert errors == {}
    assert back == CONVERSATION


def test_posted_turns_become_a_conversation_in_their_numbers_order() -> None:
    posted = {
        "kind": "conversation", "evaluation_type": "SCORE", "min_confidence": "70",
        "turns-1-user": "second", "turns-0-user": "first",
        "turns-1-checks-0-type": "tool_called", "turns-1-checks-0-tool": " stripe.refund ",
        "persona": "", "goal": "", "max_turns": "6",
    }  # fmt: skip
    content, errors = case_form.to_content(case_form.from_form_data(posted))
    assert errors == {} and content is not None and content.conversation is not None
    assert content.input is None
    assert [turn.user for turn in content.conversation.turns] == ["first", "second"]
    assert content.conversation.turns[1].checks == (ToolCalled(tool="stripe.refund"),)
    assert content.conversation.simulated_user is None, "no persona and goal: no simulated user"


@pytest.mark.parametrize(
    ("pointer", "field"),
    [
        ("/conversation/turns/2/user", "turns-2-user"),
        ("/conversation/turns/1/checks/0/tool", "turns-1-checks-0-tool"),
        ("/conversation/turns/1/checks/0", "turns-1-checks-0-type"),
        ("/conversation/turns/0/checks/3/id", "turns-0-checks-3-id"),
        # The fields of section 17's checks, an error deep inside one shown by that field.
        ("/conversation/turns/0/checks/1/schema/properties/a/type", "turns-0-checks-1-schema"),
        ("/conversation/turns/0/checks/1/arguments/order/$regexp", "turns-0-checks-1-arguments"),
        ("/conversation/turns/0/checks/1/ms", "turns-0-checks-1-ms"),
        ("/conversation/turns/0/checks/1/whatever", "turns-0-checks-1-type"),
        ("/conversation/simulated_user/goal", "goal"),
        ("/conversation/simulated_user", "persona"),
        ("/conversation/turns", "turns"),
        ("/conversation", "turns"),
        ("/pasted_transcript", "pasted_transcript"),
    ],
)
def test_a_conversations_problem_is_shown_by_its_field(pointer: str, field: str) -> None:
    assert case_form.field_of(pointer) == field


def test_a_single_turn_case_made_a_conversation_and_back_keeps_its_input_and_checks() -> None:
    single = case_form.from_content(
        TestCaseContent(input="Where is it?", checks=(ToolCalled(id="x", tool="t"),))
    )
    made = case_form.with_action(single, "to_conversation")
    assert made is not None and made[0].conversation is not None
    assert made[0].conversation.turns[0].user == "Where is it?"
    checked = case_form.with_action(made[0], "turn_add:0:output_contains")
    assert checked is not None and checked[1] == "turns-0-checks-0"
    back = case_form.with_action(checked[0], "to_single_turn")
    assert back is not None and back[0].conversation is None and back[0].input == "Where is it?"
    assert [check.type for check in back[0].checks] == ["output_contains", "tool_called"]
    assert case_form.with_action(single, "add_turn") is None, "a single-turn case has no turns"


LINES = """User: Refund order 1234
Agent: Looking it up.
Tool calls: [{"name": "orders.lookup", "arguments": {"order": 1234}}]
User: It broke
and the box too
Agent: Refunded.
User: Thanks
"""


def test_a_transcript_in_lines_pairs_each_reply_with_the_user_message_before_it() -> None:
    played = played_from_paste(LINES, scripted_turns=2, ended_by="simulated_user")
    users = [turn.user for turn in played.turns]
    assert users == ["Refund order 1234", "It broke\nand the box too", "Thanks"]
    assert played.turns[0].actual_tool_calls == [
        {"name": "orders.lookup", "arguments": {"order": 1234}}
    ]
    assert played.turns[1].actual_tool_calls == [], "a reply without calls made none"
    assert played.turns[2].actual_output is None and played.turns[2].simulated
    assert not played.turns[1].simulated
    assert played.ended_by == "simulated_user"


def test_a_transcript_as_json_messages_is_read_the_same() -> None:
    messages = [
        {"role": "user", "content": "Refund order 1234"},
        {"role": "assistant", "content": "Looking it up.", "tool_calls": [{"name": "x"}]},
    ]
    played = played_from_paste(json.dumps(messages), scripted_turns=1, ended_by="script")
    assert played.turns[0].actual_output == "Looking it up."
    assert played.turns[0].actual_tool_calls == [{"name": "x"}]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("Agent: hello", "no user message comes before it"),
        ("User: a\nAgent: b\nAgent: c", "Message 3 is the agent's"),
        ("hello\nUser: a", "Line 1 comes before the first message"),
        ("", "Paste at least one user message"),
        ('[{"role": "robot", "content": "x"}]', 'Message 1 needs a "role"'),
        ("[1, 2]", "Must be a JSON list of objects"),
        ("User: a\nAgent: b\nTool calls: {oops", "The tool calls on line 3 are not read"),
    ],
)
def test_a_transcript_that_cannot_be_read_says_why(raw: str, says: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        played_from_paste(raw, scripted_turns=1, ended_by="script")
    assert refused.value.errors[0].pointer == "/pasted_transcript"
    assert says in refused.value.errors[0].detail
