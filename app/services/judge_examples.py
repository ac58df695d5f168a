"""Calibration (contract section 15): a labelled result made an example of its AI-judge
criterion. The example goes on the case's check, so the judge's prompt for that criterion
carries it and adding one is a new revision: labels start afresh on it, the old ones stay
readable, and the judge cache sees a new question."""

from __future__ import annotations

import json
from uuid import UUID

import msgspec

from agentlasso.domain.checks import (
    MAX_EXAMPLE_REPLY_CHARS,
    MAX_JUDGE_EXAMPLES,
    JudgeExample,
    LlmJudge,
)
from agentlasso.domain.review import Verdict
from agentlasso.domain.test_cases import TestCase, TestCaseContent
from agentlasso.errors import Conflict, FieldError, InvalidInput, NotFound
from agentlasso.services import review
from agentlasso.services.platform import Platform
from agentlasso.services.test_cases import get_test_case, update_test_case

_NO_SUCH_CHECK = "This test case has no AI-judge check with this id."


def _refuse(pointer: str, detail: str) -> InvalidInput:
    return InvalidInput(detail, [FieldError(pointer=pointer, detail=detail)])


def _reply_text(output: object) -> str:
    """The reply as the example shows it, cut to what an example may hold."""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    if len(text) > MAX_EXAMPLE_REPLY_CHARS:
        text = text[: MAX_EXAMPLE_REPLY_CHARS - 1] + "…"
    return text


async def _labelled_reply(
    platform: Platform, project_id: UUID, test_case_id: UUID, item_id: UUID
) -> str:
    """The reply of the review item's result; a 422 naming /result_ref when it is none of this
    case's."""
    try:
        item = await review.get_item(platform, project_id, item_id)
    except NotFound:
        raise _refuse("/result_ref", "No review item with this id in your project.") from None
    if item.test_case_id != test_case_id:
        raise _refuse("/result_ref", "This review item is a result of another test case.")
    result, _ = await review.result_of(platform, item)
    output = result.reported.actual_output
    if output is msgspec.UNSET or output is None:
        raise _refuse("/result_ref", "This result has no reply to make an example of.")
    return _reply_text(output)


def _with_example(
    content: TestCaseContent, check_id: str, example: JudgeExample
) -> TestCaseContent:
    checks = list(content.checks or ())
    for index, check in enumerate(checks):
        if check.id == check_id and isinstance(check, LlmJudge):
            kept = check.examples or ()
            if len(kept) >= MAX_JUDGE_EXAMPLES:
                raise Conflict(
                    f"A criterion carries at most {MAX_JUDGE_EXAMPLES} examples, and this one "
                    "has as many: remove one in the rubric editor first."
                )
            checks[index] = msgspec.structs.replace(check, examples=(*kept, example))
            return msgspec.structs.replace(content, checks=tuple(checks))
    raise NotFound(_NO_SUCH_CHECK)


async def add_example(
    platform: Platform,
    project_id: UUID,
    test_case_id: UUID,
    check_id: str,
    labelled: tuple[UUID, Verdict, str | None],
) -> TestCase:
    """Add the labelled result (a review item), with the verdict and note, as an example of the
    case's llm_judge check; the case as its new revision."""
    item_id, verdict, note = labelled
    # Another project's case is a 404 before anything about the result is said.
    await get_test_case(platform, project_id, test_case_id)
    reply = await _labelled_reply(platform, project_id, test_case_id, item_id)
    example = JudgeExample(reply=reply, verdict=verdict, note=note)
    case, _ = await update_test_case(
        platform,
        project_id,
        test_case_id,
        lambda content: _with_example(content, check_id, example),
    )
    return case
