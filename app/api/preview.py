"""Previews for the rubric editor: the grade a run would give a reply, with nothing stored."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, post
from litestar.params import FromPath, JSONBody

from agentlasso.domain.checks import WrittenChecks
from agentlasso.domain.grades import CaseResult
from agentlasso.domain.test_cases import (
    CaseInput,
    Confidence,
    ContentWarning,
    EvaluationType,
    TestCaseContent,
)
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import parse_id
from agentlasso.services import preview
from agentlasso.services.test_cases import regex_warnings


class ReplyPreview(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """What the agent did; leave a field out when it was not reported."""

    actual_output: Any = msgspec.UNSET
    actual_tool_calls: Any = msgspec.UNSET


class ChecksPreview(ReplyPreview, forbid_unknown_fields=True, kw_only=True):
    """Checks not saved yet, and what the agent did."""

    checks: WrittenChecks | None = None
    evaluation_criteria_json: dict[str, Any] | None = None
    expected_output: str | None = None
    evaluation_type: EvaluationType = "SCORE"
    min_confidence: Confidence = 70
    input: CaseInput = ""


class PreviewResult(msgspec.Struct, kw_only=True):
    """The grade, as a run would report it; `warnings` name regexes that will not compile."""

    result: CaseResult
    warnings: list[ContentWarning]


class PreviewController(Controller):
    """Grade without storing."""

    tags = ("grading",)

    @post("/test-cases/{test_case_id:str}/preview", operation_id="previewTestCase", status_code=200)
    async def stored(
        self, platform: PlatformDep, project_id: ProjectId, test_case_id: FromPath[str],
        data: JSONBody[ReplyPreview],
    ) -> PreviewResult:  # fmt: skip
        """The grade this case would give the reply (its current revision)."""
        result = await preview.preview_stored_case(
            platform, project_id, parse_id(test_case_id, "test case"), data.actual_output,
            data.actual_tool_calls,
        )  # fmt: skip
        return PreviewResult(result=result, warnings=[])

    @post("/grading/preview", operation_id="previewChecks", status_code=200)
    async def unsaved(self, platform: PlatformDep, data: JSONBody[ChecksPreview]) -> PreviewResult:
        """The grade checks not yet saved would give the reply."""
        content = TestCaseContent(
            input=data.input,
            checks=None if data.checks is None else tuple(data.checks),
            evaluation_criteria_json=data.evaluation_criteria_json,
            expected_output=data.expected_output,
            evaluation_type=data.evaluation_type,
            min_confidence=data.min_confidence,
        )
        result = await preview.preview_unsaved(
            platform, content, data.actual_output, data.actual_tool_calls
        )
        return PreviewResult(result=result, warnings=regex_warnings(content))
