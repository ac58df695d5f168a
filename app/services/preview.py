"""Grading a reply against a case's checks without storing anything (the rubric editor)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from app.domain.results import CaseResult, JudgeVerdict
from app.domain.test_cases import TestCaseContent
from app.engine.grading_pool import grade_off_loop
from app.grading import grade_case, judge_requests, observation_from_wire
from app.services.platform import Platform
from app.services.test_cases import get_test_case, prepare_content

PREVIEW_NO_JUDGE = "previews do not call the AI judge; runs do"


def preview(
    content: TestCaseContent,
    actual_output: Any,
    actual_tool_calls: Any,
    out_of_time: Callable[[], bool],
) -> CaseResult:
    """The grade the case would get for this reply and these tool calls (UNSET: not reported)."""
    observation = observation_from_wire(actual_output, actual_tool_calls)
    unavailable = JudgeVerdict.unavailable(PREVIEW_NO_JUDGE)
    verdicts = {request.check_id: unavailable for request in judge_requests(content, observation)}
    return grade_case(content, observation, verdicts, out_of_time)


async def preview_stored_case(
    platform: Platform, project_id: UUID, test_case_id: UUID, actual_output: Any,
    actual_tool_calls: Any,
) -> CaseResult:  # fmt: skip
    """The grade a stored case (its current revision) would give."""
    case = await get_test_case(platform, project_id, test_case_id)
    return await grade_off_loop(
        lambda out_of_time: preview(case.content, actual_output, actual_tool_calls, out_of_time),
        platform.settings.grading_budget_s,
    )


async def preview_unsaved(
    platform: Platform, content: TestCaseContent, actual_output: Any, actual_tool_calls: Any
) -> CaseResult:
    """The grade checks not yet saved would give (ids assigned as a save would)."""
    prepared = prepare_content(content)
    return await grade_off_loop(
        lambda out_of_time: preview(prepared, actual_output, actual_tool_calls, out_of_time),
        platform.settings.grading_budget_s,
    )
