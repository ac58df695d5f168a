"""Playing a conversation: scripted turns in order, then the simulated user, and how it ends.

The agent and the simulated user are fake callables recording what they were shown.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentlasso.agent_wire.calls import AgentCallResult
from agentlasso.agent_wire.replies import parse_reply
from agentlasso.domain.conversation_play import (
    NO_USER_MODEL,
    NextUser,
    TurnAnswer,
    play_conversation,
    turn_body,
)
from agentlasso.domain.conversations import (
    Conversation,
    Message,
    ScriptedTurn,
    SimulatedUser,
    UserTurn,
)
from agentlasso.domain.judging import Usage


class FakeAgent:
    """Answers `reply to <message>`; ends, or fails, at the turns it is told to."""

    def __init__(self, *, end_at: int = 0, fail_at: int = 0) -> None:
        self.end_at = end_at
        self.fail_at = fail_at
        self.seen: list[tuple[int, Any, tuple[Message, ...]]] = []

    async def __call__(self, turn: int, user: Any, messages: tuple[Message, ...]) -> TurnAnswer:
        self.seen.append((turn, user, messages))
        if turn == self.fail_at:
            return TurnAnswer(latency_ms=7, error="the agent answered HTTP 500 (after 3 tries)")
        calls = [{"name": f"tool{turn}", "arguments": {}}]
        return TurnAnswer(
            actual_output=f"reply to {user}", actual_tool_calls=calls, latency_ms=turn,
            end=turn == self.end_at,
        )  # fmt: skip


class FakeUser:
    """Writes `user <n>`; says it is done, or fails, at the message it is told to."""

    def __init__(self, *, done_at: int = 0, fail_at: int = 0) -> None:
        self.done_at = done_at
        self.fail_at = fail_at
        self.seen: list[tuple[Message, ...]] = []

    async def __call__(self, user: SimulatedUser, messages: tuple[Message, ...]) -> UserTurn:
        self.seen.append(messages)
        asked = len(self.seen)
        usage = Usage(input_tokens=10, output_tokens=2)
        if asked == self.fail_at:
            return UserTurn(user=None, done=True, reason="", failure="the model is down")
        if asked == self.done_at:
            return UserTurn(user=None, done=True, reason="goal reached", usage=usage, model="m")
        return UserTurn(user=f"user {asked}", done=False, reason="", usage=usage, model="m")


def scripted(*messages: str) -> tuple[ScriptedTurn, ...]:
    return tuple(ScriptedTurn(user=message) for message in messages)


PERSONA = {"persona": "a customer", "goal": "a refund"}


async def test_scripted_turns_are_played_in_order_with_the_history_before_each() -> None:
    agent = FakeAgent()
    play = await play_conversation(Conversation(turns=scripted("a", "b", "c")), agent, None)
    played = play.conversation
    assert played.ended_by == "script" and play.usage is None
    assert [(r.turn, r.user, r.actual_output, r.simulated) for r in played.turns] == [
        (1, "a", "reply to a", False),
        (2, "b", "reply to b", False),
        (3, "c", "reply to c", False),
    ]
    assert [len(messages) for _, _, messages in agent.seen] == [0, 2, 4]
    third = agent.seen[2][2]
    assert [(m.role, m.content) for m in third] == [
        ("user", "a"),
        ("assistant", "reply to a"),
        ("user", "b"),
        ("assistant", "reply to b"),
    ]
    assert third[1].tool_calls == [{"name": "tool1", "arguments": {}}]


async def test_the_agent_ending_stops_the_conversation() -> None:
    agent = FakeAgent(end_at=2)
    play = await play_conversation(Conversation(turns=scripted("a", "b", "c")), agent, None)
    assert play.conversation.ended_by == "agent"
    assert len(play.conversation.turns) == 2 and len(agent.seen) == 2


async def test_an_agent_error_stops_there_with_the_error_recorded() -> None:
    agent = FakeAgent(fail_at=2)
    conversation = Conversation(
        turns=scripted("a", "b", "c"), simulated_user=SimulatedUser(**PERSONA)
    )
    user = FakeUser()
    play = await play_conversation(conversation, agent, user)
    played = play.conversation
    assert played.ended_by == "error" and len(played.turns) == 2
    failed = played.turns[1]
    assert failed.error is not None and "HTTP 500" in failed.error
    assert failed.actual_output is None and failed.latency_ms == 7
    assert user.seen == [], "the simulated user is never asked after an error"


async def test_the_simulated_user_plays_on_after_the_script_up_to_max_turns() -> None:
    agent = FakeAgent()
    user = FakeUser()
    conversation = Conversation(
        turns=scripted("a"), simulated_user=SimulatedUser(**PERSONA, max_turns=3)
    )
    play = await play_conversation(conversation, agent, user)
    played = play.conversation
    assert played.ended_by == "max_turns"
    assert [(r.user, r.simulated) for r in played.turns] == [
        ("a", False),
        ("user 1", True),
        ("user 2", True),
        ("user 3", True),
    ]
    assert [len(messages) for messages in user.seen] == [2, 4, 6]
    assert play.usage is not None
    assert play.usage.calls == 3 and play.usage.model == "m"
    assert play.usage.usage == Usage(input_tokens=30, output_tokens=6)


async def test_the_opening_is_the_first_message_and_counts_as_one_of_max_turns() -> None:
    agent = FakeAgent()
    user = FakeUser()
    simulated = SimulatedUser(**PERSONA, max_turns=2, opening="hello")
    play = await play_conversation(Conversation(simulated_user=simulated), agent, user)
    assert [r.user for r in play.conversation.turns] == ["hello", "user 1"]
    assert play.conversation.ended_by == "max_turns"
    assert all(r.simulated for r in play.conversation.turns)
    assert len(user.seen) == 1


async def test_without_an_opening_or_a_script_the_model_writes_the_first_message() -> None:
    user = FakeUser(done_at=2)
    simulated = SimulatedUser(**PERSONA)
    play = await play_conversation(Conversation(simulated_user=simulated), FakeAgent(), user)
    assert user.seen[0] == ()
    assert [r.user for r in play.conversation.turns] == ["user 1"]
    assert play.conversation.ended_by == "simulated_user"
    assert play.conversation.not_graded_reason is None


async def test_a_user_model_failure_ends_it_not_graded_with_the_reason() -> None:
    user = FakeUser(fail_at=2)
    conversation = Conversation(turns=scripted("a"), simulated_user=SimulatedUser(**PERSONA))
    play = await play_conversation(conversation, FakeAgent(), user)
    assert play.conversation.ended_by == "simulated_user"
    assert play.conversation.not_graded_reason == "the model is down"
    assert len(play.conversation.turns) == 2


async def test_no_user_model_ends_a_simulated_conversation_not_graded() -> None:
    conversation = Conversation(turns=scripted("a"), simulated_user=SimulatedUser(**PERSONA))
    no_model: NextUser | None = None
    play = await play_conversation(conversation, FakeAgent(), no_model)
    assert play.conversation.ended_by == "simulated_user"
    assert play.conversation.not_graded_reason == NO_USER_MODEL
    assert len(play.conversation.turns) == 1


async def test_an_agent_ending_on_a_simulated_turn_ends_by_agent() -> None:
    conversation = Conversation(simulated_user=SimulatedUser(**PERSONA, opening="hi"))
    play = await play_conversation(conversation, FakeAgent(end_at=1), FakeUser())
    assert play.conversation.ended_by == "agent" and len(play.conversation.turns) == 1


async def test_unreported_output_and_calls_and_json_replies() -> None:
    async def agent(turn: int, user: Any, messages: tuple[Message, ...]) -> TurnAnswer:
        return TurnAnswer(actual_output={"ok": turn}) if turn == 1 else TurnAnswer()

    play = await play_conversation(Conversation(turns=scripted("a", "b")), agent, None)
    first, second = play.conversation.turns
    assert first.actual_output == '{"ok":1}' and first.actual_tool_calls is None
    assert second.actual_output is None and second.error is None


def test_a_turn_body_carries_the_conversation_fields() -> None:
    messages = (Message(role="user", content="a"), Message(role="assistant", content="b"))
    body = turn_body({"input": None, "trial": 2}, "cid", 2, "next", messages)
    wire = msgspec.json.decode(msgspec.json.encode(body))
    assert wire == {
        "input": "next",
        "trial": 2,
        "conversation_id": "cid",
        "turn": 2,
        "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
    }


def test_end_true_is_read_from_the_reply_and_carried_by_the_call() -> None:
    ended = parse_reply(b'{"output": "bye", "end": true}')
    assert not isinstance(ended, str) and ended.end is True
    for body in (b'{"output": "x"}', b'{"output": "x", "end": "yes"}', b'{"end": 1}'):
        reply = parse_reply(body)
        assert not isinstance(reply, str) and reply.end is False
    call = AgentCallResult("bye", msgspec.UNSET, None, (), 5, end=True)
    assert call.turn_answer().end is True
