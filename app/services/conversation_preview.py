"""Previewing a conversation case in the rubric editor: the whole conversation played against
the project's agent (or a transcript pasted), then graded as a run would, the judge included.

Nothing is stored. A preview is counted against the project's previews a minute as one call
per turn it may take, plus one per judged check.
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.agents.conversations import (
    NextUser,
    TurnAnswer,
    new_conversation_id,
    play_conversation,
    turn_body,
)
from agentlasso.agents.headers import target_for
from agentlasso.domain.checks import LlmJudge
from agentlasso.domain.conversations import Message, PlayedConversation, SimulatedUsage
from agentlasso.domain.grades import CaseResult
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.errors import Conflict
from agentlasso.grading import grade_answer, verdicts_needed
from agentlasso.grading.plan import expected_output
from agentlasso.judge.judging import NO_JUDGE
from agentlasso.services import judge_settings
from agentlasso.services.agents import PREVIEW_SOURCE, default_agent
from agentlasso.services.grading_pool import grade_off_loop
from agentlasso.services.platform import Platform
from agentlasso.services.preview import NO_AGENT, unavailable_verdicts
from agentlasso.services.test_cases import prepare_content


class ConversationPreview(msgspec.Struct, frozen=True, kw_only=True):
    """A previewed conversation as the rubric editor shows it: each turn, and the grade."""

    result: CaseResult
    played: PlayedConversation
    # What the AI judge said of each judged check, when it was asked.
    judge: list[JudgeRecord]
    # What asking the simulated user cost, when it was asked.
    usage: SimulatedUsage | None = None
    agent_s: float = 0.0
    judge_s: float = 0.0


async def preview_conversation(
    platform: Platform,
    project_id: UUID,
    content: TestCaseContent,
    context: dict[str, Any] | None,
    test_case_id: UUID | None,
    next_user: NextUser | None,
) -> ConversationPreview:
    """Play the unsaved conversation against the project's agent, then grade it; `next_user`
    plays the simulated user (None: none can be asked, and a simulated part is not graded)."""
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
    conversation_id = new_conversation_id()

    async def call_turn(turn: int, user: Any, messages: tuple[Message, ...]) -> TurnAnswer:
        call = await platform.agent_client.call(
            target, turn_body(body, conversation_id, turn, user, messages)
        )
        return TurnAnswer.of_call(call)

    started = time.perf_counter()
    play = await play_conversation(conversation, call_turn, next_user)
    agent_s = time.perf_counter() - started
    judged = await judge_conversation(platform, project_id, prepared, play.conversation, context)
    return msgspec.structs.replace(judged, usage=play.usage, agent_s=agent_s)


async def preview_pasted_conversation(
    platform: Platform,
    project_id: UUID,
    content: TestCaseContent,
    context: dict[str, Any] | None,
    played: PlayedConversation,
) -> ConversationPreview:
    """Grade a transcript typed in, as a run would grade it (the AI judge included)."""
    prepared = prepare_content(content)
    await _count_calls(platform, project_id, prepared, agent_calls=0)
    return await judge_conversation(platform, project_id, prepared, played, context)


async def judge_conversation(
    platform: Platform,
    project_id: UUID,
    prepared: TestCaseContent,
    played: PlayedConversation,
    context: dict[str, Any] | None,
) -> ConversationPreview:
    """The played conversation's grade, with the judge asked now when it is configured."""
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
        verdicts = unavailable_verdicts(requests, NO_JUDGE)
    result = await grade_off_loop(
        lambda out_of_time: grade_answer(prepared, played, verdicts, out_of_time),
        platform.settings.grading_budget_s,
    )
    return ConversationPreview(result=result, played=played, judge=records, judge_s=judge_s)


async def _count_calls(
    platform: Platform, project_id: UUID, prepared: TestCaseContent, agent_calls: int
) -> None:
    """One preview call per turn it may take and per judged check it may ask about (judged
    checks count only when a judge is configured); TooManyRequests past the minute's."""
    conversation = prepared.conversation
    assert conversation is not None
    checks = [check for _, check in conversation.turn_checks()] + list(prepared.checks or ())
    judged = sum(1 for check in checks if isinstance(check, LlmJudge))
    judged += 0 if expected_output(prepared) is None else 1
    if judged and not await judge_settings.judge_configured(platform, project_id):
        judged = 0
    calls = max(1, agent_calls + judged)
    await platform.limits.take_preview_calls(project_id, calls, "this preview")
