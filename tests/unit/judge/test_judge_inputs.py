"""What the judge is shown of a conversation: the transcript before the reply it judges, its
latest messages kept when it is too long, and the cut said."""

from __future__ import annotations

from agentlasso.domain.conversations import Message
from agentlasso.domain.grades import Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import JudgeRequest
from agentlasso.judge.inputs import shown_to_judge

CONTENT = TestCaseContent(input="unused for a conversation")


def request(messages: tuple[Message, ...]) -> JudgeRequest:
    return JudgeRequest(
        check_id="c1", kind="llm_judge", criterion="Confirms before refunding",
        evaluation_type="BOOLEAN", conversation_input=messages, conversation_reply="Refunded.",
    )  # fmt: skip


def test_a_short_transcript_is_shown_whole_with_the_reply_judged() -> None:
    messages = (Message(role="user", content="Refund A-17"),)
    question, cut = shown_to_judge(request(messages), CONTENT, Observation(), None, 1_000)
    assert question.case_input == [{"role": "user", "content": "Refund A-17"}]
    assert question.reply == "Refunded." and cut == []


def test_a_long_transcript_keeps_its_latest_messages_and_says_so() -> None:
    messages = tuple(
        Message(role="user" if n % 2 == 0 else "assistant", content=f"message {n} " + "x" * 80)
        for n in range(40)
    )
    question, cut = shown_to_judge(request(messages), CONTENT, Observation(), None, 1_000)
    shown = question.case_input
    assert isinstance(shown, dict)
    latest = shown["latest"]
    assert latest[-1]["content"].startswith("message 39 ")
    assert shown["messages_left_out"] == 40 - len(latest) > 0
    assert cut == [f"the conversation so far (its latest {len(latest)} of 40 messages)"]


def test_a_single_message_too_long_shows_the_end_of_its_json() -> None:
    messages = (Message(role="user", content="y" * 5_000 + " the end"),)
    question, cut = shown_to_judge(request(messages), CONTENT, Observation(), None, 1_000)
    assert isinstance(question.case_input, dict)
    assert question.case_input["end_of_json"].endswith('the end"}')
    assert len(question.case_input["end_of_json"]) == 1_000 and cut
