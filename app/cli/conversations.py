"""Playing a conversation case from the CI machine (`agentlasso ci`, contract section 13): one
call to the agent per turn, the scripted turns first, then the simulated user's, which the
platform writes (POST /eval-runs/{id}/next-user-turn)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from agentlasso.cli.local_agents import AgentAnswer, AgentCaller, request_body
from agentlasso.client import (
    ClientError,
    NextUserTurn,
    PlatformUnavailable,
    PostedTurn,
    ResultToPost,
    RunTestCase,
)
from agentlasso.domain.conversations import Conversation, EndedBy

# The simulated user's next message, from the transcript so far.
AskUser = Callable[[list[dict[str, Any]]], Awaitable[NextUserTurn]]


class _Playing:
    """A conversation as it is played: its id, the turns so far, the transcript."""

    def __init__(self, agent: AgentCaller, run_id: str, case: RunTestCase) -> None:
        self.agent, self.run_id, self.case = agent, run_id, case
        # New for each trial (a CI run has one) and each replay of the whole conversation.
        self.conversation_id = str(uuid.uuid4())
        self.turns: list[PostedTurn] = []
        self.messages: list[dict[str, Any]] = []

    async def turn(self, user: Any, *, simulated: bool) -> EndedBy | None:
        """Send one user message; how the conversation ended, when this turn ended it."""
        body = {
            **request_body(self.run_id, self.case),
            "input": user,
            "conversation_id": self.conversation_id,
            "turn": len(self.turns) + 1,
            "messages": list(self.messages),
        }
        answer = await self.agent.exchange(body)
        self.turns.append(_posted_turn(answer, user if simulated else msgspec.UNSET))
        if answer.reply is None:
            return "error"
        self.messages.append({"role": "user", "content": user})
        said = {"role": "assistant", "content": answer.reply.get("output")}
        if answer.reply.get("tool_calls"):
            said["tool_calls"] = answer.reply["tool_calls"]
        self.messages.append(said)
        return "agent" if answer.reply.get("end") is True else None

    def result(self, ended_by: EndedBy, unplayed: str | None = None) -> ResultToPost:
        """The turns played, as the result to post."""
        return ResultToPost(
            test_case_id=self.case.test_case_id,
            turns=self.turns,
            ended_by=ended_by,
            agent_error=unplayed,
        )


def _posted_turn(answer: AgentAnswer, user: Any) -> PostedTurn:
    reply = answer.reply or {}
    return PostedTurn(
        actual_output=reply.get("output", msgspec.UNSET) if answer.reply else msgspec.UNSET,
        actual_tool_calls=reply.get("tool_calls", msgspec.UNSET) if answer.reply else msgspec.UNSET,
        latency_ms=answer.latency_ms,
        error=None if answer.reply is not None else answer.error or "the agent call failed",
        user=user,
    )


async def play_conversation(
    agent: AgentCaller, run_id: str, case: RunTestCase, ask_user: AskUser
) -> ResultToPost:
    """Play the case's scripted turns, then its simulated user's, until it ends."""
    conversation = case.conversation
    assert isinstance(conversation, Conversation), "a conversation case"
    playing = _Playing(agent, run_id, case)
    for scripted in conversation.turns:
        ended = await playing.turn(scripted.user, simulated=False)
        if ended is not None:
            return playing.result(ended)
    simulated = conversation.simulated_user
    if simulated is None:
        return playing.result("script")
    for written in range(simulated.max_turns):
        if written == 0 and not conversation.turns and simulated.opening is not None:
            user: str = simulated.opening
        else:
            try:
                next_turn = await ask_user(playing.messages)
            except (ClientError, PlatformUnavailable) as exc:
                why = f"the simulated user could not be asked: {exc}"
                return playing.result("simulated_user", unplayed=why)
            if next_turn.done or next_turn.user is None:
                return playing.result("simulated_user")
            user = next_turn.user
        ended = await playing.turn(user, simulated=True)
        if ended is not None:
            return playing.result(ended)
    return playing.result("max_turns")
