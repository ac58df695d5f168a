"""Grading a pasted conversation against an unsaved conversation case (the rubric editor's
Paste a reply), as a run grades one: each turn's checks on its turn, the case's on the whole,
the AI judge asked about the transcript when the project has one."""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from agentlasso.domain.conversations import PlayedConversation
from agentlasso.domain.grades import JudgeVerdict
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_answer, verdicts_needed
from agentlasso.grading.conversation import whole_observation
from agentlasso.judge.judging import NO_JUDGE
from agentlasso.services import judge_settings
from agentlasso.services.grading_pool import grade_off_loop
from agentlasso.services.platform import Platform
from agentlasso.services.preview import JudgedPreview
from agentlasso.services.test_cases import prepare_content


class PlayedPreview(JudgedPreview, frozen=True, kw_only=True):
    """A pasted conversation's preview: the grade, and the conversation graded."""

    played: PlayedConversation


async def preview_pasted_conversation(
    platform: Platform,
    project_id: UUID,
    content: TestCaseContent,
    context: dict[str, Any] | None,
    played: PlayedConversation,
) -> PlayedPreview:
    """Grade a pasted conversation as a run would (InvalidInput when the case is not valid)."""
    prepared = prepare_content(content)
    requests = verdicts_needed(prepared, played)
    configured = bool(requests) and await judge_settings.judge_configured(platform, project_id)
    await platform.limits.take_preview_calls(
        project_id, max(1, len(requests) if configured else 0), "this preview"
    )
    observation = whole_observation(played)
    records: list[JudgeRecord] = []
    judge_s = 0.0
    if configured:
        started = time.perf_counter()
        verdicts, records = await platform.preview_judge.verdicts(
            project_id, prepared, observation, context, requests
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
        result=result, observation=observation, call=None, judge=records, judge_s=judge_s,
        played=played,
    )  # fmt: skip
