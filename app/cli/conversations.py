"""Playing a conversation case from the CI machine (`agentlasso ci`, contract section 13): by
the same rules as server mode (app/domain/conversation_play.py), one call to the local agent per
turn, the simulated user's messages written by the platform
(POST /eval-runs/{id}/next-user-turn); then posted as the result's turns."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from agentlasso.cli.local_agents import AgentCaller, request_body
from agentlasso.client import (
    ClientError,
    NextUserTurn,
    PlatformUnavailable,
    PostedTurn,
    ResultToPost,
    RunTestCase,
)
from agentlasso.domain.conversation_play import (
    TurnAnswer,
    new_conversation_id,
    play_conversation,
    turn_body,
)
from agentlasso.domain.conversations import (
    Conversation,
    Message,
    PlayedConversation,
    SimulatedUser,
    UserTurn,
)

# The simulated user's next message, from the transcript so far.
AskUser = Callable[[list[dict[str, Any]]], Awaitable[NextUserTurn]]
Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]
# Asking for one user message: at most this many tries, none starting later than this after
# the first. The platform's quota of simulated turns answers 429 with the seconds until one is
# free; its model being unavailable, 503 with Retry-After: 30 (four tries fit).
USER_TURN_TRIES = 5
USER_TURN_WAIT_S = 120.0
# The answers that say when to ask again, with their Retry-After. One without it (a proxy's,
# not the platform's) says nothing a bounded wait could rely on: the conversation gives up.
RETRIED_STATUSES = frozenset({429, 503})


async def ask_with_retries(
    ask_user: AskUser, transcript: list[dict[str, Any]], *,
    sleep: Sleep = asyncio.sleep, clock: Clock = time.monotonic,
) -> NextUserTurn:  # fmt: skip
    """The simulated user's next message, asked again after a 429 or 503 once its Retry-After
    has passed: at most USER_TURN_TRIES tries, none starting past USER_TURN_WAIT_S seconds
    after the first. Any other error, a 429 or 503 without Retry-After, or one asking for a
    wait past those seconds is raised at once."""
    deadline = clock() + USER_TURN_WAIT_S
    tries = 1
    while True:
        try:
            return await ask_user(transcript)
        except (ClientError, PlatformUnavailable) as exc:
            wait_s = _retry_wait_s(exc)
            if tries >= USER_TURN_TRIES or wait_s is None or clock() + wait_s > deadline:
                raise
        await sleep(wait_s)
        tries += 1


def _retry_wait_s(exc: ClientError | PlatformUnavailable) -> float | None:
    """The wait the platform asked for before asking again; None when it is not to be retried."""
    if exc.status not in RETRIED_STATUSES:
        return None
    return exc.retry_after_s


async def play_conversation_case(
    agent: AgentCaller, run_id: str, case: RunTestCase, ask_user: AskUser
) -> ResultToPost:
    """Play the case's scripted turns, then its simulated user's, until it ends; the result
    to post."""
    conversation = case.conversation
    assert isinstance(conversation, Conversation), "a conversation case"
    base = request_body(run_id, case)
    # New for each trial (a CI run has one) and each replay of the whole conversation.
    conversation_id = new_conversation_id()

    async def call_turn(turn: int, user: Any, messages: tuple[Message, ...]) -> TurnAnswer:
        body = turn_body(base, conversation_id, turn, user, messages)
        answer = await agent.exchange(msgspec.to_builtins(body))
        latency_ms = answer.latency_ms or 0
        if answer.reply is None:
            why = answer.error or "the agent call failed"
            return TurnAnswer(latency_ms=latency_ms, error=why, agent_trace_id=answer.trace_id)
        reply = answer.reply
        return TurnAnswer(
            actual_output=reply.get("output", msgspec.UNSET),
            actual_tool_calls=reply.get("tool_calls", msgspec.UNSET),
            latency_ms=latency_ms,
            end=reply.get("end") is True,
            agent_trace_id=answer.trace_id,
        )

    async def next_user(simulated: SimulatedUser, messages: tuple[Message, ...]) -> UserTurn:
        try:
            asked = await ask_with_retries(ask_user, msgspec.to_builtins(messages))
        except (ClientError, PlatformUnavailable) as exc:
            # 409 (no model), or a 429 or 503 still refused after its retries: the
            # conversation is posted not graded.
            why = f"the simulated user could not be asked: {exc}"
            return UserTurn(user=None, done=False, reason=why, failure=why)
        return UserTurn(user=asked.user, done=asked.done, reason=asked.reason)

    play = await play_conversation(conversation, call_turn, next_user)
    return posted_result(case.test_case_id, play.conversation)


def posted_result(test_case_id: str, played: PlayedConversation) -> ResultToPost:
    """A played conversation as a CI client posts it: its turns (the user's message only past
    the script), how it ended, and why it could not be played out, when it could not."""
    turns = [
        PostedTurn(
            actual_output=msgspec.UNSET if turn.actual_output is None else turn.actual_output,
            actual_tool_calls=(
                msgspec.UNSET if turn.actual_tool_calls is None else turn.actual_tool_calls
            ),
            latency_ms=turn.latency_ms,
            error=turn.error,
            user=turn.user if turn.simulated else msgspec.UNSET,
            agent_trace_id=turn.agent_trace_id if isinstance(turn.agent_trace_id, str) else None,
        )
        for turn in played.turns
    ]
    return ResultToPost(
        test_case_id=test_case_id,
        turns=turns,
        ended_by=played.ended_by,
        agent_error=played.not_graded_reason,
    )
