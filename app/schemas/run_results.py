"""A run's case results on the wire: the grades of a posted batch, and stored results."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from agentlasso.domain.agent_calls import Attempt
from agentlasso.domain.conversations import EndedBy, TurnRecord, UserMessage
from agentlasso.domain.grades import CheckResult, UngradedItem
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.trace_context import TraceId
from agentlasso.schemas.runs import RunGate

Outcome = Literal["passed", "failed", "not_graded"]


class PostedTurn(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One turn of a conversation as a CI client posts it (contract section 13); a field left
    UNSET was not reported."""

    actual_output: Any = msgspec.UNSET
    actual_tool_calls: Any = msgspec.UNSET
    latency_ms: Annotated[int, msgspec.Meta(ge=0)] | None = None
    # The call to the agent failed at this turn, and why: the conversation stopped there.
    error: Annotated[str, msgspec.Meta(max_length=2000)] | None = None
    # The user message of this turn: the scripted turn's when left out; required past the
    # script (the simulated user's message).
    user: UserMessage | msgspec.UnsetType = msgspec.UNSET
    # The W3C trace id of the traceparent this turn's call to the agent carried (section 14).
    agent_trace_id: TraceId | None = None


class NextUserTurn(msgspec.Struct, kw_only=True):
    """POST /eval-runs/{id}/next-user-turn's answer as a CI client reads it: the simulated
    user's next message (None when it is done), and why."""

    user: str | None
    done: bool
    reason: str = ""


class GradedResult(msgspec.Struct, kw_only=True):
    """One posted case's grade."""

    test_case_id: str
    graded: bool
    pass_fail: bool
    score: float | None
    partially_graded: bool
    judge_reasoning: str
    check_results: tuple[CheckResult, ...]
    ungraded_items: tuple[UngradedItem, ...]


class ResultsAnswer(RunGate, kw_only=True):
    """The run after a batch, and the grade of each posted case."""

    results: list[GradedResult]


class StillJudging(RunGate, kw_only=True):
    """202: the batch is stored but its verdicts are still coming; long-poll the run."""

    detail: str


class AgentCall(msgspec.Struct, kw_only=True):
    """The platform's call to the agent for a case (server mode)."""

    latency_ms: int | None
    attempts: tuple[Attempt, ...]
    error: str | None


class StoredResult(GradedResult, kw_only=True):
    """A stored case result, with what the agent did and what the AI judge said."""

    trial: int
    outcome: Outcome
    # True while its AI judge checks wait for verdicts: the grade is provisional.
    judge_pending: bool = False
    judge: tuple[JudgeRecord, ...] | None = None
    actual_output: Any = msgspec.UNSET
    actual_tool_calls: Any = msgspec.UNSET
    agent_call: AgentCall | None = None
    # The W3C trace id the call to the agent carried (section 14): the agent's own spans, when
    # it exported them, are the trace of that id. Per turn for a conversation.
    agent_trace_id: str | msgspec.UnsetType = msgspec.UNSET
    # How long the agent took: the platform's call (as in agent_call), or what a CI client
    # posted; left out when neither measured it.
    latency_ms: int | msgspec.UnsetType = msgspec.UNSET
    # A conversation's result only: its turns as they ran, how it ended, and which attempt of
    # the whole conversation they are (above 1 when a worker stopped during an earlier one,
    # which was played again from its first turn).
    turns: tuple[TurnRecord, ...] | msgspec.UnsetType = msgspec.UNSET
    ended_by: EndedBy | msgspec.UnsetType = msgspec.UNSET
    conversation_attempt: int | msgspec.UnsetType = msgspec.UNSET
    # Why the conversation could not be played out (the simulated user's model unavailable):
    # it was then not graded. Left out when it was played.
    not_played_reason: str | msgspec.UnsetType = msgspec.UNSET
    # The case's trials in this run taken together: some passed (pass@k), all passed (pass^k),
    # they disagree (flaky).
    pass_at_k: bool | None = None
    pass_all_k: bool | None = None
    flaky: bool | None = None


class ResultPage(msgspec.Struct, kw_only=True):
    """A page of a run's results."""

    items: list[StoredResult]
    next_cursor: str | None
