"""The recording path's grading step: one grade for a CI client's posted reply and a worker's
answered call, and a row that keeps what was reported as it came."""

from __future__ import annotations

from uuid import uuid4

import msgspec
import pytest

from agentlasso.agents import AgentCallResult
from agentlasso.domain.case_results import Reported
from agentlasso.domain.checks import LatencyBelow, LlmJudge, OutputContains
from agentlasso.domain.test_cases import PinnedCase, TestCaseContent
from agentlasso.services.ci_results import PostedResult, posted_reply
from agentlasso.services.recording import Reply, RunGrading, grade

RUN = uuid4()
CONTAINS = OutputContains(id="days", value="3-5 business days")
JUDGED = LlmJudge(id="tone", criterion="The reply is polite.")


def pinned(*checks: OutputContains | LlmJudge | LatencyBelow) -> PinnedCase:
    content = TestCaseContent(input="Where is my refund?", checks=checks)
    return PinnedCase(position=1, test_case_id=uuid4(), revision_id=uuid4(), content=content)


def never() -> bool:
    return False


def test_a_posted_reply_is_graded_decoded_and_stored_as_it_came() -> None:
    case = pinned(CONTAINS)
    body = b'{"test_case_id": "x", "actual_output": "Back in 3-5 business days."}'
    posted = msgspec.json.decode(body, type=PostedResult)
    result, row = grade(
        RunGrading(run_id=RUN, judge_configured=False), posted_reply(case, posted), never
    )
    assert result.pass_fail and row.pass_fail and row.trial == 1
    assert row.actual_output == msgspec.Raw(b'"Back in 3-5 business days."')
    assert (row.output_reported, row.tool_calls_reported) == (True, False)
    assert row.agent_latency_ms is None and row.agent_attempts is None


def test_a_posted_latency_is_graded_and_stored() -> None:
    case = pinned(LatencyBelow(id="c1", ms=1000))
    body = b'{"test_case_id": "x", "actual_output": "ok", "latency_ms": 1250}'
    posted = msgspec.json.decode(body, type=PostedResult)
    result, row = grade(
        RunGrading(run_id=RUN, judge_configured=False), posted_reply(case, posted), never
    )
    assert (
        result.check_results[0].detail
        == "The agent answered in 1,250 ms, over the 1,000 ms allowed."
    )
    assert row.agent_latency_ms == 1250 and row.agent_attempts is None


def test_an_answered_call_is_graded_with_its_call_record() -> None:
    case = pinned(CONTAINS)
    call = AgentCallResult(
        actual_output="No idea.", actual_tool_calls=msgspec.UNSET, error=None, attempts=(),
        latency_ms=42,
    )  # fmt: skip
    result, row = grade(
        RunGrading(run_id=RUN, judge_configured=False), Reply.answered(case, 2, call), never
    )
    assert not result.pass_fail and not row.pass_fail
    assert (row.test_case_id, row.trial, row.revision_id) == (
        case.test_case_id,
        2,
        case.revision_id,
    )
    assert row.agent_latency_ms == 42 and row.agent_attempts == ()


@pytest.mark.parametrize(("judge_configured", "pending"), [(True, True), (False, False)])
def test_judge_checks_wait_only_when_a_judge_is_configured(
    judge_configured: bool, pending: bool
) -> None:
    reply = Reply(
        case=pinned(CONTAINS, JUDGED), trial=1, actual_output="3-5 business days",
        actual_tool_calls=msgspec.UNSET, reported=Reported(actual_output="3-5 business days"),
        agent_error=None,
    )  # fmt: skip
    _, row = grade(RunGrading(run_id=RUN, judge_configured=judge_configured), reply, never)
    assert row.judge_pending is pending
    assert row.flags().judge_pending is pending
