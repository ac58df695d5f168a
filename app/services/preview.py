"""Grading a reply against a case's checks without storing anything (the rubric editor)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from app.domain.results import CaseResult, JudgeVerdict
from app.domain.test_cases import TestCaseContent
from app.grading import grade_case, judge_requests, observation_from_wire
from app.services.platform import Platform
from app.services.test_cases import get_test_case, prepare_content

PREVIEW_NO_JUDGE = "previews do not call the AI judge; runs do"


def preview(content: TestCaseContent, actual_output: Any, actual_tool_calls: Any) -> CaseResult:
    """The grade the case would get for this reply and these tool calls (UNSET: not reported)."""
    observation = observation_from_wire(actual_output, actual_tool_calls)
    unavailable = JudgeVerdict.unavailable(PREVIEW_NO_JUDGE)
    verdicts = {request.check_id: unavailable for request in judge_requests(content, observation)}
    return grade_case(content, observation, verdicts)


async def preview_stored_case(
    platform: Platform, project_id: UUID, test_case_id: UUID, actual_output: Any,
    actual_tool_calls: Any,
) -> CaseResult:  # fmt: skip
    """The grade a stored case (its current revision) would give."""
    case = await get_test_case(platform, project_id, test_case_id)
    return preview(case.content, actual_output, actual_tool_calls)


def preview_unsaved(
    content: TestCaseContent, actual_output: Any, actual_tool_calls: Any
) -> CaseResult:
    """The grade checks not yet saved would give (ids assigned as a save would)."""
    return preview(prepare_content(content), actual_output, actual_tool_calls)
