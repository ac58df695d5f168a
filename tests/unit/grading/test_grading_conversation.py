"""Grading a conversation (contract section 13): turn checks on their turn, case checks on the
whole, and what an agent error at turn k does to each."""

from __future__ import annotations

import msgspec

from agentlasso.domain.checks import (
    LlmJudge,
    OutputContains,
    OutputValidJson,
    ToolCalled,
    ToolNotCalled,
    ToolOrder,
)
from agentlasso.domain.conversations import (
    Conversation,
    Message,
    PlayedConversation,
    ScriptedTurn,
    TurnRecord,
)
from agentlasso.domain.grades import JudgeVerdict, Observation
from agentlasso.domain.test_cases import TestCaseContent, with_conversation_ids
from agentlasso.grading import EXPECTATION_ID, grade_answer, verdicts_needed

LOOKUP = {"name": "orders.lookup", "arguments": {"order": "A-17"}}
REFUND = {"name": "stripe.refund", "arguments": {"order": "A-17"}}


def refund_case(**fields: object) -> TestCaseContent:
    """Three scripted turns of a refund, a check on each, and the case's own checks."""
    conversation = Conversation(
        turns=(
            ScriptedTurn(user="I want a refund", checks=(OutputContains(value="order number"),)),
            ScriptedTurn(user="It is A-17", checks=(ToolCalled(tool="orders.lookup"),)),
            ScriptedTurn(user="Yes, refund it", checks=(ToolCalled(tool="stripe.refund"),)),
        )
    )
    content = TestCaseContent(
        conversation=conversation,
        checks=(ToolOrder(tools=("orders.lookup", "stripe.refund")), OutputContains(value="done")),
        **fields,  # type: ignore[arg-type]
    )
    return with_conversation_ids(content)


def turn(number: int, reply: str | None, *calls: dict[str, object], **fields: object) -> TurnRecord:
    return TurnRecord(
        turn=number, user=f"message {number}", actual_output=reply,
        actual_tool_calls=list(calls), **fields,  # type: ignore[arg-type]
    )  # fmt: skip


GOOD = PlayedConversation(
    turns=(
        turn(1, "What is your order number?"),
        turn(2, "Found it.", LOOKUP),
        turn(3, "Refund done.", REFUND),
    ),
    ended_by="script",
)


def statuses(result: object) -> list[tuple[str, object, str]]:
    return [(r.id, r.turn, r.status) for r in result.check_results]  # type: ignore[attr-defined]


def test_ids_run_through_the_turns_then_the_case() -> None:
    content = refund_case()
    assert content.conversation is not None
    turn_ids = [check.id for _, check in content.conversation.turn_checks()]
    assert turn_ids == ["c1", "c2", "c3"]
    assert [check.id for check in content.checks or ()] == ["c4", "c5"]


def test_a_good_conversation_passes_every_turn_and_the_case() -> None:
    result = grade_answer(refund_case(), GOOD, {})
    assert result.outcome == "passed"
    assert verdicts_needed(refund_case(), GOOD) == ()  # no judge check, no expectation
    assert statuses(result) == [
        ("c1", 1, "passed"),
        ("c2", 2, "passed"),
        ("c3", 3, "passed"),
        ("c4", msgspec.UNSET, "passed"),
        ("c5", msgspec.UNSET, "passed"),
    ]
    # A turn's check says its turn on the wire; the case's own checks do not.
    encoded = msgspec.to_builtins(result.check_results)
    assert encoded[0]["turn"] == 1 and "turn" not in encoded[3]


def test_a_failed_turn_is_named_with_its_turn() -> None:
    forgot = msgspec.structs.replace(GOOD, turns=(*GOOD.turns[:2], turn(3, "Refund done.")))
    result = grade_answer(refund_case(), forgot, {})
    assert result.outcome == "failed"
    assert "turn 3: c3 tool_called" in result.judge_reasoning
    # The case's order check sees every call of every turn in order: the refund never came.
    assert "c4 tool_order" in result.judge_reasoning
    failed = result.check_results[2]
    assert failed.detail.startswith("stripe.refund was never called")


def test_case_checks_see_all_calls_in_order_and_the_final_reply() -> None:
    reordered = PlayedConversation(
        turns=(turn(1, "Refunded", REFUND), turn(2, "Looked up", LOOKUP), turn(3, "done")),
        ended_by="script",
    )
    result = grade_answer(refund_case(), reordered, {})
    by_id = {r.id: r for r in result.check_results}
    assert by_id["c4"].status == "failed"  # refund before lookup
    assert by_id["c5"].status == "passed"  # "done" is in the final reply only


def test_an_agent_error_fails_that_turn_and_later_and_the_case_checks() -> None:
    broken = PlayedConversation(
        turns=(turn(1, "What is your order number?"), turn(2, None, error="HTTP 500 from agent")),
        ended_by="error",
    )
    result = grade_answer(refund_case(expected_output="The refund is confirmed."), broken, {})
    by_id = {r.id: r for r in result.check_results}
    stopped = "The conversation stopped at turn 2: HTTP 500 from agent."
    assert by_id["c1"].status == "passed"  # earlier turns keep their verdicts
    for check_id in ("c2", "c3", "c4", "c5", EXPECTATION_ID):
        assert by_id[check_id].status == "failed"
        assert by_id[check_id].detail == stopped
    assert by_id["c3"].turn == 3
    assert result.judge_reasoning.endswith(stopped)
    assert verdicts_needed(refund_case(expected_output="x"), broken) == ()


def test_an_error_without_a_failed_turn_still_stops_the_case() -> None:
    odd = PlayedConversation(turns=(), ended_by="error")
    result = grade_answer(refund_case(), odd, {})
    assert result.outcome == "failed"
    assert result.check_results[0].detail == "The conversation stopped on an agent error."


def test_an_empty_error_message_is_named_as_a_failed_call() -> None:
    broken = PlayedConversation(turns=(turn(1, None, error=""),), ended_by="error")
    result = grade_answer(refund_case(), broken, {})
    assert result.check_results[0].detail == (
        "The conversation stopped at turn 1: the agent call failed."
    )


def test_turns_the_agent_ended_before_fail_saying_so() -> None:
    ended = PlayedConversation(turns=(turn(1, "Bye, order number?"),), ended_by="agent")
    result = grade_answer(refund_case(), ended, {})
    by_id = {r.id: r for r in result.check_results}
    assert by_id["c1"].status == "passed"
    assert by_id["c2"].detail == (
        "Turn 2 never ran: the conversation ended after turn 1 (the agent ended the conversation)."
    )
    # Termination is not a verdict: the case checks still decide, on what happened.
    assert by_id["c5"].status == "failed"


def test_unreported_calls_in_one_turn_leave_the_case_tool_checks_unverifiable() -> None:
    content = with_conversation_ids(
        TestCaseContent(
            conversation=Conversation(turns=(ScriptedTurn(user="hi"), ScriptedTurn(user="again"))),
            checks=(ToolNotCalled(tool="stripe.refund"),),
        )
    )
    unreported = PlayedConversation(
        turns=(turn(1, "hello"), TurnRecord(turn=2, user="again", actual_output="hi")),
        ended_by="script",
    )
    result = grade_answer(content, unreported, {})
    assert result.check_results[0].status == "failed"
    assert "not reported" in result.check_results[0].detail


def test_unreadable_calls_are_named_with_their_turn() -> None:
    content = with_conversation_ids(
        TestCaseContent(
            conversation=Conversation(turns=(ScriptedTurn(user="hi"),)),
            checks=(ToolCalled(tool="orders.lookup"),),
        )
    )
    played = PlayedConversation(turns=(turn(1, "ok", {"arguments": {}}),), ended_by="script")
    result = grade_answer(content, played, {})
    assert "turn 1: " in result.check_results[0].detail


def test_a_conversation_with_no_check_anywhere_is_not_graded() -> None:
    content = TestCaseContent(conversation=Conversation(turns=(ScriptedTurn(user="hi"),)))
    played = PlayedConversation(turns=(turn(1, "hello"),), ended_by="script")
    assert grade_answer(content, played, {}).outcome == "not_graded"


def test_judge_checks_are_asked_with_the_transcript_before_their_reply() -> None:
    conversation = Conversation(
        turns=(
            ScriptedTurn(user="I want a refund"),
            ScriptedTurn(user="It is A-17", checks=(LlmJudge(criterion="Asks to confirm"),)),
            ScriptedTurn(user="never answered", checks=(LlmJudge(criterion="unused"),)),
            ScriptedTurn(user="Thanks"),
        )
    )
    content = with_conversation_ids(
        TestCaseContent(
            conversation=conversation,
            checks=(LlmJudge(criterion="Polite throughout"), OutputValidJson()),
            expected_output="The refund is confirmed.",
            evaluation_type="BOOLEAN",
        )
    )
    played = PlayedConversation(
        turns=(
            TurnRecord(turn=1, user="I want a refund", actual_output="Order number?"),
            TurnRecord(turn=2, user="It is A-17", actual_output="Shall I refund it?"),
            TurnRecord(turn=3, user="never answered"),
            TurnRecord(turn=4, user="Thanks", actual_output='{"refund": "confirmed"}'),
        ),
        ended_by="script",
    )
    requests = {request.check_id: request for request in verdicts_needed(content, played)}
    assert set(requests) == {"c1", "c3", EXPECTATION_ID}  # c2's turn was never answered
    assert requests["c1"].conversation_reply == "Shall I refund it?"
    assert requests["c1"].conversation_input == (
        Message(role="user", content="I want a refund"),
        Message(role="assistant", content="Order number?"),
        Message(role="user", content="It is A-17"),
    )
    # The case's judge sees the whole transcript up to the final reply, which is judged.
    assert requests["c3"].conversation_input is not None
    assert requests["c3"].conversation_input[-2:] == (
        Message(role="user", content="never answered"),
        Message(role="user", content="Thanks"),
    )
    assert requests["c3"].conversation_reply == '{"refund": "confirmed"}'
    assert requests[EXPECTATION_ID].kind == "expectation"
    verdicts = {
        "c1": JudgeVerdict.decided(True),
        "c3": JudgeVerdict.decided(False),
        EXPECTATION_ID: JudgeVerdict.decided(True),
    }
    by_id = {r.id: r for r in grade_answer(content, played, verdicts).check_results}
    assert (by_id["c1"].status, by_id["c1"].turn) == ("passed", 2)
    assert by_id["c3"].status == "failed"


def test_a_single_turn_answer_grades_and_asks_as_before() -> None:
    content = TestCaseContent(input="hi", checks=(LlmJudge(id="j", criterion="Greets"),))
    observation = Observation(actual_output="hello", tool_calls=())
    assert [r.check_id for r in verdicts_needed(content, observation)] == ["j"]
    result = grade_answer(content, observation, {"j": JudgeVerdict.decided(True)})
    assert result.outcome == "passed"


def test_an_outage_of_the_simulated_user_is_never_passed() -> None:
    outage = PlayedConversation(
        turns=(turn(1, "What is your order number?"),),
        ended_by="simulated_user",
        not_graded_reason="the simulated user's model did not answer (HTTP 529 overloaded)",
    )
    content = refund_case(expected_output="Refund confirmed.")
    result = grade_answer(content, outage, {})
    # Its critical checks could not be graded: as for any case, that fails it (the gate
    # counts it), and every check says why it was not graded.
    assert (result.outcome, result.pass_fail) == ("failed", False)
    assert {r.status for r in result.check_results} == {"not_graded"}
    assert {r.detail for r in result.check_results} == {
        "Not graded: the simulated user's model did not answer (HTTP 529 overloaded)."
    }
    assert result.judge_reasoning.startswith("No check could be graded. Not graded: ")
    assert result.judge_reasoning.endswith(
        "The conversation could not be played out: the simulated user's model did not answer "
        "(HTTP 529 overloaded)."
    )
    assert [r.turn for r in result.check_results][:3] == [1, 2, 3]
    assert verdicts_needed(content, outage) == ()


def test_an_outage_with_only_minor_checks_leaves_the_conversation_not_graded() -> None:
    outage = PlayedConversation(turns=(), ended_by="simulated_user", not_graded_reason="down")
    content = with_conversation_ids(
        TestCaseContent(
            conversation=Conversation(turns=(ScriptedTurn(user="hi"),)),
            checks=(OutputContains(value="hello", severity="minor"),),
        )
    )
    result = grade_answer(content, outage, {})
    assert result.outcome == "not_graded" and not result.pass_fail


def test_the_expectation_fails_when_the_final_reply_was_not_reported() -> None:
    content = with_conversation_ids(
        TestCaseContent(
            conversation=Conversation(turns=(ScriptedTurn(user="hi"),)),
            expected_output="A greeting.",
        )
    )
    unreported = PlayedConversation(turns=(TurnRecord(turn=1, user="hi"),), ended_by="script")
    (expectation,) = grade_answer(content, unreported, {}).check_results
    assert expectation.status == "failed"
    assert expectation.detail == "The reply was not reported, so this check cannot be verified."
