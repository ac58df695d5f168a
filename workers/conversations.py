"""A conversation case in a lane: all its turns played in order in the item's slot of its
chunk, then recorded as any reply is (app/services/recording.py, `Reply.played`).

Crash safety: a conversation is played whole within one attempt of its chunk, and its result
is stored with the chunk (once per case and trial). A chunk redone after its worker died plays
it again from turn 1 under a new conversation_id, so a stored result's turns all come from one
attempt; `conversation_attempt` is the chunk's attempt (a chunk handed back on SIGTERM keeps
its attempt number, as its results were never stored).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agentlasso.agents import AgentCallResult
from agentlasso.domain.agent_calls import AgentCall, Attempt
from agentlasso.domain.case_results import Reported
from agentlasso.domain.conversation_play import (
    ConversationPlay,
    NextUser,
    TurnAnswer,
    new_conversation_id,
    play_conversation,
    turn_body,
)
from agentlasso.domain.conversations import Message, failed_turn, reported_answer
from agentlasso.services.recording import CaseTrial, Reply

# (body, turn number) -> the agent's answer; the lane's slots and pacing are the caller's.
CallAgent = Callable[[dict[str, Any], int], Awaitable[AgentCallResult]]


def most_calls(item: CaseTrial) -> int:
    """The most calls an item can make: one, or a conversation's scripted turns and its
    simulated user's max_turns. A chunk takes their pace under the host's quota at once: one
    Redis round trip a chunk, where one a turn was most of a turn's CPU. A conversation that
    ends sooner leaves its turns unused: its calls are paced early, never late."""
    conversation = item.case.content.conversation
    return 1 if conversation is None else max(1, conversation.most_turns())


async def play_case(
    item: CaseTrial,
    body: dict[str, Any],
    call_agent: CallAgent,
    next_user: NextUser | None,
    attempt: int,
) -> Reply:
    """Play the item's conversation against the agent, as this attempt; its reply to record."""
    conversation = item.case.content.conversation
    assert conversation is not None, "only a conversation case is played"
    conversation_id = new_conversation_id()
    calls: list[AgentCallResult] = []

    async def call_turn(turn: int, user: Any, messages: tuple[Message, ...]) -> TurnAnswer:
        call = await call_agent(turn_body(body, conversation_id, turn, user, messages), turn)
        calls.append(call)
        return call.turn_answer()

    play = await play_conversation(conversation, call_turn, next_user)
    return played_reply(item, play, attempt, calls)


def played_reply(
    item: CaseTrial, play: ConversationPlay, attempt: int, calls: list[AgentCallResult]
) -> Reply:
    """What is recorded of a played conversation: the final reply and every call in order,
    the first failed turn's error, and the calls' time added up."""
    played = play.conversation
    output, tool_calls = reported_answer(played)
    error = failed_turn(played)
    latency_ms = sum(call.latency_ms for call in calls)
    attempts: tuple[Attempt, ...] = calls[-1].attempts if calls else ()
    return Reply(
        case=item.case, trial=item.trial, actual_output=output, actual_tool_calls=tool_calls,
        reported=Reported(actual_output=output, actual_tool_calls=tool_calls),
        agent_error=error,
        agent_call=AgentCall(latency_ms=latency_ms, attempts=attempts, error=error),
        played=play.played(attempt),
    )  # fmt: skip
