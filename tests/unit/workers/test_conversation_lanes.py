"""What a lane records of a played conversation, and the simulated user's seam."""

from __future__ import annotations

from uuid import uuid4

import msgspec

from agentlasso.agents import AgentCallResult, Attempt
from agentlasso.domain.conversation_play import ConversationPlay
from agentlasso.domain.conversations import (
    Conversation,
    PlayedConversation,
    ScriptedTurn,
    SimulatedUser,
    TurnRecord,
)
from agentlasso.domain.test_cases import PinnedCase, TestCaseContent
from agentlasso.services.recording import CaseTrial, answer_of
from agentlasso_workers.conversations import most_calls, played_reply

CONTENT = TestCaseContent(
    conversation=Conversation(turns=(ScriptedTurn(user="a"), ScriptedTurn(user="b")))
)
ITEM = CaseTrial(
    2, PinnedCase(position=1, test_case_id=uuid4(), revision_id=uuid4(), content=CONTENT)
)


def call(latency_ms: int, error: str | None = None) -> AgentCallResult:
    attempts = (Attempt(1, 200 if error is None else 500, latency_ms, error),)
    return AgentCallResult("x", [], error, attempts, latency_ms)


def test_the_final_reply_every_call_in_order_and_the_time_added_up() -> None:
    turns = (
        TurnRecord(turn=1, user="a", actual_output="one", actual_tool_calls=[{"name": "t1"}]),
        TurnRecord(turn=2, user="b", actual_output="two", actual_tool_calls=[{"name": "t2"}]),
    )
    play = ConversationPlay(conversation=PlayedConversation(turns=turns, ended_by="script"))
    reply = played_reply(ITEM, play, 3, [call(40), call(60)])
    assert reply.trial == 2 and reply.agent_error is None
    assert reply.reported.actual_output == "two"
    assert reply.reported.actual_tool_calls == [{"name": "t1"}, {"name": "t2"}]
    assert reply.agent_call is not None and reply.agent_call.latency_ms == 100
    assert reply.played is not None and reply.played.attempt == 3
    assert answer_of(reply) == play.conversation


def test_a_failed_turn_is_the_reply_s_error_by_its_turn() -> None:
    turns = (
        TurnRecord(turn=1, user="a", actual_output="one"),
        TurnRecord(turn=2, user="b", error="the agent answered HTTP 500"),
    )
    play = ConversationPlay(conversation=PlayedConversation(turns=turns, ended_by="error"))
    reply = played_reply(ITEM, play, 1, [call(5), call(7, "the agent answered HTTP 500")])
    assert reply.agent_error == "turn 2: the agent answered HTTP 500"
    assert reply.reported.actual_output is msgspec.UNSET
    assert reply.reported.actual_tool_calls is msgspec.UNSET
    assert reply.agent_call is not None and reply.agent_call.attempts[0].status == 500


def test_a_chunk_paces_a_conversations_every_possible_turn_at_once() -> None:
    # One call for a single-turn case; a scripted conversation's turns; and the simulated
    # user's max_turns besides (6 by default).
    single = msgspec.structs.replace(ITEM.case, content=TestCaseContent(input="hi"))
    assert most_calls(msgspec.structs.replace(ITEM, case=single)) == 1
    assert most_calls(ITEM) == 2
    simulated = TestCaseContent(
        conversation=Conversation(simulated_user=SimulatedUser(persona="p", goal="g"))
    )
    only_simulated = msgspec.structs.replace(ITEM.case, content=simulated)
    assert most_calls(msgspec.structs.replace(ITEM, case=only_simulated)) == 6
