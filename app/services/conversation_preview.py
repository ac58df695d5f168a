"""Previewing a conversation case in the rubric editor, as a run grades one: each turn's checks
on its turn, the case's on the whole, the AI judge asked about the transcript when the project
has one. Preview plays the whole conversation against the project's agent; Paste a reply
grades a transcript typed in. Nothing is stored.

A preview counts against the project's previews a minute: one call per turn it may play, plus
one per verdict it asks the judge for.

Playing it has PREVIEW_PLAY_S in all. Past it, the turn in flight fails saying so (the
conversation ends by `error` at that turn, graded on what was played, as a run grades a
failed turn), or, while the simulated user is being asked, the conversation ends not graded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.agents.headers import target_for
from agentlasso.domain.checks import LlmJudge
from agentlasso.domain.conversation_play import (
    NextUser,
    TurnAnswer,
    new_conversation_id,
    play_conversation,
    turn_body,
)
from agentlasso.domain.conversations import (
    Message,
    PlayedConversation,
    SimulatedUsage,
    SimulatedUser,
    UserTurn,
)
from agentlasso.domain.grades import JudgeVerdict
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.domain.tool_fixtures import fixtures_field
from agentlasso.errors import Conflict
from agentlasso.grading import grade_answer, verdicts_needed
from agentlasso.grading.conversation import whole_observation
from agentlasso.grading.plan import expected_output
from agentlasso.judge.judging import NO_JUDGE
from agentlasso.services import judge_settings
from agentlasso.services.agents import PREVIEW_SOURCE, default_agent
from agentlasso.services.grading_pool import grade_off_loop
from agentlasso.services.platform import Platform
from agentlasso.services.preview import NO_AGENT, JudgedPreview
from agentlasso.services.test_cases import prepare_content

# A preview holds a web request (and the editor's page) while it plays: up to 70 turns, each
# with the agent's timeout and retries and the simulated user's, could take many minutes.
# The grading after it (the judge's calls) is bounded by the judge's own timeouts.
PREVIEW_PLAY_S = 120.0


class _PlayTime:
    """What is left of the preview's PREVIEW_PLAY_S, for each call it makes while it plays."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._at = self._loop.time() + PREVIEW_PLAY_S
        self.ran_out = f"the preview's {PREVIEW_PLAY_S:g} s ran out"

    async def agent_turn(self, call: Awaitable[TurnAnswer]) -> TurnAnswer:
        """The turn's answer; or, past the deadline, the turn failed saying so."""
        started = self._loop.time()
        timeout = asyncio.timeout_at(self._at)
        try:
            async with timeout:
                return await call
        except TimeoutError:
            if not timeout.expired():
                raise
            latency_ms = int((self._loop.time() - started) * 1000)
            return TurnAnswer(error=self.ran_out, latency_ms=latency_ms)

    def simulated_user(self, next_user: NextUser | None) -> NextUser | None:
        """The simulated user, asked within the deadline (past it, the conversation ends)."""
        if next_user is None:
            return None
        asking = next_user

        async def in_time(user: SimulatedUser, messages: tuple[Message, ...]) -> UserTurn:
            timeout = asyncio.timeout_at(self._at)
            try:
                async with timeout:
                    return await asking(user, messages)
            except TimeoutError:
                if not timeout.expired():
                    raise
                reason = f"{self.ran_out} while the simulated user was asked"
                return UserTurn(user=None, done=False, reason=reason, failure=reason)

        return in_time


class PlayedPreview(JudgedPreview, frozen=True, kw_only=True):
    """A conversation's preview: the grade, and the conversation graded."""

    played: PlayedConversation
    # What asking the simulated user cost, when it was asked.
    usage: SimulatedUsage | None = None


async def preview_conversation(
    platform: Platform,
    project_id: UUID,
    content: TestCaseContent,
    context: dict[str, Any] | None,
    test_case_id: UUID | None,
) -> PlayedPreview:
    """Play the unsaved conversation against the project's agent (within PREVIEW_PLAY_S),
    then grade it. The simulated user is the judge's model; with none configured the
    conversation is not graded once the script is done, saying why."""
    prepared = prepare_content(content)
    conversation = prepared.conversation
    assert conversation is not None, "a single-turn case is previewed by preview_with_agent"
    agent = await default_agent(platform, project_id)
    if agent is None:
        raise Conflict(NO_AGENT)
    await _count_calls(platform, project_id, prepared, conversation.most_turns())
    target = target_for(platform.secret_key, agent)
    body: dict[str, Any] = {
        "source": PREVIEW_SOURCE, "run_id": None, "trial": 1, "context": context or {},
    }  # fmt: skip
    if test_case_id is not None:
        body["test_case_id"] = str(test_case_id)
    body.update(fixtures_field(prepared.tool_fixtures))
    conversation_id = new_conversation_id()
    play_time = _PlayTime()

    async def call_agent(sent: dict[str, Any]) -> TurnAnswer:
        return (await platform.agent_client.call(target, sent)).turn_answer()

    async def call_turn(turn: int, user: Any, messages: tuple[Message, ...]) -> TurnAnswer:
        sent = turn_body(body, conversation_id, turn, user, messages)
        return await play_time.agent_turn(call_agent(sent))

    started = time.perf_counter()
    next_user = await _simulated_user(platform, project_id, conversation.simulated_user)
    play = await play_conversation(conversation, call_turn, play_time.simulated_user(next_user))
    agent_s = time.perf_counter() - started
    judged = await _judged(platform, project_id, prepared, play.conversation, context)
    return msgspec.structs.replace(judged, usage=play.usage, agent_s=agent_s)


async def _simulated_user(
    platform: Platform, project_id: UUID, simulated: SimulatedUser | None
) -> NextUser | None:
    """Who plays the user in a preview: the project's judge model (else the server's), kept
    open by the API, its spend on the server's key counted against the project's daily
    budget; None without one."""
    if simulated is None:
        return None
    player = await platform.preview_judge.simulated_user(project_id)
    if player is None:
        return None
    spend = platform.server_spend if player.server_key else None

    async def next_user(user: SimulatedUser, messages: tuple[Message, ...]) -> UserTurn:
        if spend is not None and (spent := await spend.spent_reason(project_id)) is not None:
            return UserTurn(user=None, done=False, reason=spent, failure=spent, calls=0)
        asked = await player.ask(user, messages)
        if spend is not None and asked.cost_usd:
            await spend.add(project_id, asked.cost_usd)
        return msgspec.structs.replace(asked.turn, cost_usd=asked.cost_usd, calls=asked.calls)

    return next_user


async def preview_pasted_conversation(
    platform: Platform,
    project_id: UUID,
    content: TestCaseContent,
    context: dict[str, Any] | None,
    played: PlayedConversation,
) -> PlayedPreview:
    """Grade a pasted conversation as a run would (InvalidInput when the case is not valid)."""
    prepared = prepare_content(content)
    await _count_calls(platform, project_id, prepared, agent_calls=0)
    return await _judged(platform, project_id, prepared, played, context)


async def _judged(
    platform: Platform,
    project_id: UUID,
    prepared: TestCaseContent,
    played: PlayedConversation,
    context: dict[str, Any] | None,
) -> PlayedPreview:
    """The played conversation's grade, the judge asked now when it is configured."""
    requests = verdicts_needed(prepared, played)
    records: list[JudgeRecord] = []
    judge_s = 0.0
    if requests and await judge_settings.judge_configured(platform, project_id):
        started = time.perf_counter()
        verdicts, records = await platform.preview_judge.verdicts(
            project_id, prepared, played, context
        )
        judge_s = time.perf_counter() - started
    else:
        unavailable = JudgeVerdict.unavailable(NO_JUDGE)
        verdicts = {request.check_id: unavailable for request in requests}
    result = await grade_off_loop(
        lambda out_of_time: grade_answer(prepared, played, verdicts, out_of_time),
        platform.settings.grading_budget_s,
    )
    return PlayedPreview(
        result=result, observation=whole_observation(played), call=None, judge=records,
        judge_s=judge_s, played=played,
    )  # fmt: skip


async def _count_calls(
    platform: Platform, project_id: UUID, prepared: TestCaseContent, agent_calls: int
) -> None:
    """One preview call per turn it may play and per verdict it may ask for (verdicts count
    only when a judge is configured); TooManyRequests past the minute's."""
    conversation = prepared.conversation
    assert conversation is not None
    checks = [check for _, check in conversation.turn_checks()] + list(prepared.checks or ())
    judged = sum(1 for check in checks if isinstance(check, LlmJudge))
    judged += 0 if expected_output(prepared) is None else 1
    if judged and not await judge_settings.judge_configured(platform, project_id):
        judged = 0
    await platform.limits.take_preview_calls(
        project_id, max(1, agent_calls + judged), "this preview"
    )
