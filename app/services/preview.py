"""Grading a reply against a case's checks without storing anything (the rubric editor).

The API's preview endpoints grade a given reply and leave the AI judge out; the rubric
editor's Preview calls the project's agent with the unsaved case and asks the judge too, so
what it shows is what a run would grade.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.agents import AgentCallResult
from agentlasso.domain.declared_tools import declared_tools
from agentlasso.domain.grades import CaseResult, DeclaredTools, JudgeVerdict, Observation
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.domain.tool_fixtures import fixtures_sent
from agentlasso.errors import Conflict, FieldError, InvalidInput
from agentlasso.grading import JudgeRequest, grade_case, judge_requests, observation_from_wire
from agentlasso.judge.judging import NO_JUDGE
from agentlasso.services import judge_settings
from agentlasso.services.agents import PREVIEW_SOURCE, call_agent_once, default_agent
from agentlasso.services.grading_pool import grade_off_loop
from agentlasso.services.platform import Platform
from agentlasso.services.test_cases import get_test_case, prepare_content

NO_AGENT = (
    "No agent is registered for this project: register it under Settings, Your agent, or "
    "paste a reply to grade instead."
)

PREVIEW_NO_JUDGE = "previews do not call the AI judge; runs do"
CONVERSATION_PREVIEW = (
    "This case is a conversation: one reply cannot grade its turns. Preview it in the rubric "
    "editor (which plays it, or grades a pasted transcript), or run it."
)


def preview(
    content: TestCaseContent,
    actual_output: Any,
    actual_tool_calls: Any,
    out_of_time: Callable[[], bool],
) -> CaseResult:
    """The grade the case would get for this reply and these tool calls (UNSET: not reported).
    A conversation is graded turn by turn, never on one reply: InvalidInput."""
    if content.conversation is not None:
        raise InvalidInput(
            CONVERSATION_PREVIEW, [FieldError(pointer="/conversation", detail=CONVERSATION_PREVIEW)]
        )
    observation = observation_from_wire(actual_output, actual_tool_calls)
    verdicts = unavailable_verdicts(judge_requests(content, observation), PREVIEW_NO_JUDGE)
    return grade_case(content, observation, verdicts, out_of_time)


def unavailable_verdicts(requests: Sequence[JudgeRequest], reason: str) -> dict[str, JudgeVerdict]:
    """A verdict for each judged check saying why the judge was not asked."""
    unavailable = JudgeVerdict.unavailable(reason)
    return {request.check_id: unavailable for request in requests}


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


class JudgedPreview(msgspec.Struct, frozen=True, kw_only=True):
    """A preview as the rubric editor shows it: what the agent did, and the grade."""

    result: CaseResult
    observation: Observation
    # The call to the agent (None when the reply was pasted).
    call: AgentCallResult | None
    # What the AI judge said of each judged check, when it was asked.
    judge: list[JudgeRecord]
    # How long the agent and the judge took (the rest of a preview's time is the platform's).
    agent_s: float = 0.0
    judge_s: float = 0.0


async def preview_with_agent(
    platform: Platform,
    project_id: UUID,
    content: TestCaseContent,
    context: dict[str, Any] | None,
    test_case_id: UUID | None,
) -> JudgedPreview:
    """Call the project's agent with the unsaved case, then grade its reply as a run would."""
    if content.input is None:
        raise InvalidInput(
            CONVERSATION_PREVIEW, [FieldError(pointer="/conversation", detail=CONVERSATION_PREVIEW)]
        )
    agent = await default_agent(platform, project_id)
    if agent is None:
        raise Conflict(NO_AGENT)
    await _count_calls(platform, project_id, content, agent_calls=1)
    started = time.perf_counter()
    call = await call_agent_once(
        platform, agent, content.input, context, source=PREVIEW_SOURCE,
        test_case_id=test_case_id, tool_fixtures=fixtures_sent(content.tool_fixtures),
    )  # fmt: skip
    agent_s = time.perf_counter() - started
    observation = observation_from_wire(
        call.actual_output,
        call.actual_tool_calls,
        agent_error=call.error,
        latency_ms=call.latency_ms,
    )
    tools = declared_tools(agent.tools)
    judged = await _judged(platform, project_id, content, observation, context, call, tools)
    return msgspec.structs.replace(judged, agent_s=agent_s)


async def preview_pasted(
    platform: Platform,
    project_id: UUID,
    content: TestCaseContent,
    context: dict[str, Any] | None,
    reply: Any,
    tool_calls: Any,
) -> JudgedPreview:
    """Grade a reply and tool calls typed in, as a run would (the AI judge included)."""
    await _count_calls(platform, project_id, content, agent_calls=0)
    observation = observation_from_wire(reply, tool_calls)
    # A pasted reply is taken to be the project's agent's: its declared tools check the calls.
    agent = await default_agent(platform, project_id)
    tools = None if agent is None else declared_tools(agent.tools)
    return await _judged(platform, project_id, content, observation, context, None, tools)


async def _count_calls(
    platform: Platform, project_id: UUID, content: TestCaseContent, agent_calls: int
) -> None:
    """Count the preview against its project's previews a minute: one, plus each judge check it
    may ask the model about; TooManyRequests past them."""
    judged = judge_requests(prepare_content(content))
    if judged and not await judge_settings.judge_configured(platform, project_id):
        judged = ()
    calls = max(1, agent_calls + len(judged))
    await platform.limits.take_preview_calls(project_id, calls, "this preview")


async def _judged(
    platform: Platform,
    project_id: UUID,
    content: TestCaseContent,
    observation: Observation,
    context: dict[str, Any] | None,
    call: AgentCallResult | None,
    tools: DeclaredTools | None,
) -> JudgedPreview:
    prepared = prepare_content(content)
    records: list[JudgeRecord] = []
    requests = judge_requests(prepared, observation)
    # A case without judge checks needs no word from the judge's settings.
    judge_s = 0.0
    if requests and await judge_settings.judge_configured(platform, project_id):
        started = time.perf_counter()
        verdicts, records = await platform.preview_judge.verdicts(
            project_id, prepared, observation, context
        )
        judge_s = time.perf_counter() - started
    else:
        verdicts = unavailable_verdicts(requests, NO_JUDGE)
    result = await grade_off_loop(
        lambda out_of_time: grade_case(prepared, observation, verdicts, out_of_time, tools),
        platform.settings.grading_budget_s,
    )
    return JudgedPreview(
        result=result, observation=observation, call=call, judge=records, judge_s=judge_s
    )
