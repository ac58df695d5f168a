"""A case result as stored: the grade, what the agent did, and how the platform called it."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.domain.agent_calls import AgentCall
from agentlasso.domain.conversations import (
    EndedBy,
    PlayedConversation,
    SimulatedUsage,
    TurnRecord,
)
from agentlasso.domain.grades import CaseResult, Outcome
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.runs import ResultFlags
from agentlasso.domain.test_cases import TestCaseContent


class Reported(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What the agent did, as reported; a field left UNSET was not reported at all."""

    actual_output: Any = msgspec.UNSET
    actual_tool_calls: Any = msgspec.UNSET
    # How long the agent took: measured by the platform's call, or posted by a CI client.
    latency_ms: int | None = None


class Played(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A conversation as one attempt of it ran, with what its simulated user cost."""

    conversation: PlayedConversation
    # 1 the first time; a worker that died mid-conversation makes the next attempt 2.
    attempt: int = 1
    usage: SimulatedUsage | None = None


class StoredResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One (test case, trial) of a run, as stored."""

    seq: int
    run_id: UUID
    test_case_id: UUID
    trial: int
    revision_id: UUID
    result: CaseResult
    reported: Reported
    # Server mode only: the platform's call to the agent. None in CI mode.
    agent_call: AgentCall | None
    # True while its AI judge checks wait for verdicts: the grade is provisional.
    judge_pending: bool
    judge_records: tuple[JudgeRecord, ...] | None
    # The agent call failed (a CI client's posted agent_error, or the platform's call).
    agent_error: str | None
    created_at: datetime
    # A conversation's result only: contract section 13.
    turns: tuple[TurnRecord, ...] | None = None
    ended_by: EndedBy | None = None
    conversation_attempt: int | None = None
    simulated_usage: SimulatedUsage | None = None
    # Why the conversation could not be played out (then not graded); None when it was.
    not_played_reason: str | None = None
    # The trace id of a single-turn result's agent call (a conversation's are on its turns).
    agent_trace_id: str | None = None

    @property
    def outcome(self) -> Outcome:
        """passed, failed or not_graded."""
        return self.result.outcome

    def flags(self) -> ResultFlags:
        """What this result counts for in its run's counters."""
        return ResultFlags(
            graded=self.result.graded,
            pass_fail=self.result.pass_fail,
            errored=self.agent_error is not None,
            no_checks=not self.result.check_results,
            judge_pending=self.judge_pending,
        )


class NewResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A result about to be stored; the field names and order are the table's columns."""

    run_id: UUID
    test_case_id: UUID
    trial: int
    revision_id: UUID
    outcome: Outcome
    graded: bool
    pass_fail: bool
    no_checks: bool
    errored: bool
    score: float | None
    partially_graded: bool
    judge_reasoning: str
    check_results: tuple[Any, ...]
    ungraded_items: tuple[Any, ...]
    output_reported: bool
    actual_output: Any
    tool_calls_reported: bool
    actual_tool_calls: Any
    agent_latency_ms: int | None
    agent_attempts: tuple[Any, ...] | None
    agent_error: str | None
    judge_pending: bool
    judge_records: tuple[JudgeRecord, ...] | None
    # A conversation's result only (None for a single-turn case): contract section 13.
    turns: tuple[TurnRecord, ...] | None = None
    ended_by: EndedBy | None = None
    conversation_attempt: int | None = None
    simulated_usage: SimulatedUsage | None = None
    not_played_reason: str | None = None
    # Every trace id the result's agent calls carried: one, or one per turn played.
    agent_trace_ids: tuple[str, ...] | None = None

    @classmethod
    def graded_as(
        cls,
        run_id: UUID,
        test_case_id: UUID,
        trial: int,
        revision_id: UUID,
        result: CaseResult,
        reported: Reported,
        *,
        agent_error: str | None,
        agent_call: AgentCall | None = None,
        judge_pending: bool = False,
        played: Played | None = None,
        agent_trace_id: str | None = None,
    ) -> NewResult:
        """The row for a graded case; UNSET output or calls were not reported."""
        output_reported = reported.actual_output is not msgspec.UNSET
        calls_reported = reported.actual_tool_calls is not msgspec.UNSET
        return cls(
            run_id=run_id, test_case_id=test_case_id, trial=trial, revision_id=revision_id,
            outcome=result.outcome, graded=result.graded, pass_fail=result.pass_fail,
            no_checks=not result.check_results, errored=agent_error is not None,
            score=result.score, partially_graded=result.partially_graded,
            judge_reasoning=result.judge_reasoning, check_results=result.check_results,
            ungraded_items=result.ungraded_items, output_reported=output_reported,
            actual_output=reported.actual_output if output_reported else None,
            tool_calls_reported=calls_reported,
            actual_tool_calls=reported.actual_tool_calls if calls_reported else None,
            agent_latency_ms=reported.latency_ms if agent_call is None else agent_call.latency_ms,
            agent_attempts=None if agent_call is None else agent_call.attempts,
            agent_error=agent_error, judge_pending=judge_pending, judge_records=None,
            turns=None if played is None else played.conversation.turns,
            ended_by=None if played is None else played.conversation.ended_by,
            conversation_attempt=None if played is None else played.attempt,
            simulated_usage=None if played is None else played.usage,
            not_played_reason=None if played is None else played.conversation.not_graded_reason,
            agent_trace_ids=_trace_ids(agent_trace_id, played),
        )  # fmt: skip

    def flags(self) -> ResultFlags:
        """What this result counts for in its run's counters."""
        return ResultFlags(
            graded=self.graded,
            pass_fail=self.pass_fail,
            errored=self.errored,
            no_checks=self.no_checks,
            judge_pending=self.judge_pending,
        )


def _trace_ids(agent_trace_id: str | None, played: Played | None) -> tuple[str, ...] | None:
    """The trace ids of a result's calls: its one call's, or each played turn's."""
    if played is not None:
        turns = played.conversation.turns
        ids = tuple(t.agent_trace_id for t in turns if isinstance(t.agent_trace_id, str))
    else:
        ids = () if agent_trace_id is None else (agent_trace_id,)
    return ids or None


class AwaitingJudge(msgspec.Struct, frozen=True, kw_only=True):
    """A stored result whose AI judge checks wait for verdicts, with the case it grades."""

    seq: int
    flags: ResultFlags
    reported: Reported
    agent_error: str | None
    content: TestCaseContent
    # A conversation case: how it was played.
    played: PlayedConversation | None = None


class JudgedResult(msgspec.Struct, frozen=True, kw_only=True):
    """A result's final grade once its verdicts are in, with the verdict records behind it."""

    seq: int
    result: CaseResult
    records: tuple[JudgeRecord, ...]

    def flags(self, before: ResultFlags) -> ResultFlags:
        """What the result counts for now that its verdicts replaced the provisional grade."""
        return ResultFlags(
            graded=self.result.graded,
            pass_fail=self.result.pass_fail,
            errored=before.errored,
            no_checks=before.no_checks,
            judge_pending=False,
        )


class TrialSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A case's trials in one run taken together: some passed (pass@k), every one passed
    (pass^k); they disagree (flaky) when some but not all did."""

    pass_at_k: bool
    pass_all_k: bool

    @property
    def flaky(self) -> bool:
        """Some trials passed and some did not."""
        return self.pass_at_k and not self.pass_all_k
