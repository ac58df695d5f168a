"""Playing one conversation case against an agent: its scripted turns in order, then the
simulated user, until one of them (or the agent, or an error) ends it. Contract section 13.

The driver knows neither HTTP nor the model: `call_turn` makes one turn's call to the agent
(the worker's guarded client with its timeouts and retries, or the CLI's), and `next_user`
asks the model playing the user for its next message. Both are injected, so server mode and
the CLI's CI mode play a conversation by the same rules.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from agentlasso.domain.case_results import Played
from agentlasso.domain.conversations import (
    Conversation,
    EndedBy,
    Message,
    PlayedConversation,
    SimulatedUsage,
    SimulatedUser,
    TurnRecord,
    UserTurn,
    transcript,
)
from agentlasso.domain.grades import reply_text

NO_USER_MODEL = "no model is configured to play the simulated user"


class TurnAnswer(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What one turn's call to the agent gave back: UNSET where a key was missing."""

    actual_output: Any = msgspec.UNSET
    actual_tool_calls: Any = msgspec.UNSET
    latency_ms: int = 0
    # The call failed after its retries: the conversation stops at this turn.
    error: str | None = None
    # The agent answered `"end": true`.
    end: bool = False
    # The trace id of the turn's call (section 14); None when no call carried one.
    agent_trace_id: str | None = None


# (turn number, this turn's user message, the history before it) -> the agent's answer.
CallTurn = Callable[[int, Any, tuple[Message, ...]], Awaitable[TurnAnswer]]
# (who the user is, the transcript so far) -> the user's next message, or that it is done.
NextUser = Callable[[SimulatedUser, tuple[Message, ...]], Awaitable[UserTurn]]


class ConversationPlay(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A conversation as it was played, and what asking the simulated user cost."""

    conversation: PlayedConversation
    usage: SimulatedUsage | None = None

    def played(self, attempt: int) -> Played:
        """What a result stores of it, as the given attempt of the whole conversation."""
        return Played(conversation=self.conversation, attempt=attempt, usage=self.usage)


def new_conversation_id() -> str:
    """A conversation's id: new for each trial and each attempt of the whole conversation."""
    return str(uuid.uuid4())


def turn_body(
    body: dict[str, Any],
    conversation_id: str,
    turn: int,
    user: Any,
    messages: tuple[Message, ...],
) -> dict[str, Any]:
    """One turn's request body: the case's body (section 3) with this turn's user message as
    `input`, the conversation's id, the turn (1-based) and the history before it."""
    return {
        **body,
        "input": user,
        "conversation_id": conversation_id,
        "turn": turn,
        "messages": messages,
    }


class _Tally:
    """The simulated user's calls and tokens, added up over a conversation."""

    def __init__(self) -> None:
        self.usage: SimulatedUsage | None = None

    def add(self, answer: UserTurn) -> None:
        before = self.usage or SimulatedUsage()
        priced = before.cost_usd is not None or answer.cost_usd is not None
        self.usage = SimulatedUsage(
            model=answer.model or before.model,
            calls=before.calls + answer.calls,
            usage=before.usage.plus(answer.usage),
            cost_usd=(before.cost_usd or 0.0) + (answer.cost_usd or 0.0) if priced else None,
        )


async def play_conversation(
    conversation: Conversation, call_turn: CallTurn, next_user: NextUser | None
) -> ConversationPlay:
    """Play the conversation: the scripted turns in order, then the simulated user for at most
    its max_turns messages (its opening included); stopped by the agent's `end`, the user
    being done, or an agent call failing after its retries."""
    turns: list[TurnRecord] = []
    tally = _Tally()

    def ended(by: EndedBy, not_graded_reason: str | None = None) -> ConversationPlay:
        played = PlayedConversation(
            turns=tuple(turns), ended_by=by, not_graded_reason=not_graded_reason
        )
        return ConversationPlay(conversation=played, usage=tally.usage)

    for scripted in conversation.turns:
        record, answer = await _play_turn(call_turn, turns, scripted.user, simulated=False)
        turns.append(record)
        if (stop := _stopped(answer)) is not None:
            return ended(stop)
    user = conversation.simulated_user
    if user is None:
        return ended("script")
    for written in range(user.max_turns):
        if written == 0 and not turns and user.opening is not None:
            message: Any = user.opening
        else:
            asked = await _ask(next_user, user, transcript(tuple(turns)), tally)
            if isinstance(asked, UserTurn):
                return ended("simulated_user", asked.failure)
            message = asked
        record, answer = await _play_turn(call_turn, turns, message, simulated=True)
        turns.append(record)
        if (stop := _stopped(answer)) is not None:
            return ended(stop)
    return ended("max_turns")


async def _ask(
    next_user: NextUser | None,
    user: SimulatedUser,
    messages: tuple[Message, ...],
    tally: _Tally,
) -> str | UserTurn:
    """The simulated user's next message; or its answer when it is done (failure set when the
    model could not be asked, or there is none to ask)."""
    if next_user is None:
        return UserTurn(user=None, done=True, reason=NO_USER_MODEL, failure=NO_USER_MODEL)
    answer = await next_user(user, messages)
    tally.add(answer)
    if answer.failure is not None or answer.done or answer.user is None:
        return answer
    return answer.user


async def _play_turn(
    call_turn: CallTurn, turns: list[TurnRecord], user: Any, *, simulated: bool
) -> tuple[TurnRecord, TurnAnswer]:
    """One turn: the agent called with the user's message and the history before it."""
    number = len(turns) + 1
    answer = await call_turn(number, user, transcript(tuple(turns)))
    failed = answer.error is not None
    output = answer.actual_output
    calls = answer.actual_tool_calls
    record = TurnRecord(
        turn=number,
        user=user,
        simulated=simulated,
        actual_output=None if failed or output is msgspec.UNSET else reply_text(output),
        actual_tool_calls=None if failed or calls is msgspec.UNSET else calls,
        latency_ms=answer.latency_ms,
        error=answer.error,
        agent_trace_id=answer.agent_trace_id or msgspec.UNSET,
    )
    return record, answer


def _stopped(answer: TurnAnswer) -> EndedBy | None:
    """How a turn's answer ends the conversation, if it does."""
    if answer.error is not None:
        return "error"
    return "agent" if answer.end else None
