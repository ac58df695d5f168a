"""A run's case results: posted by a CI client (/api/v1/eval-run-results), and read back."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Response, get, post
from litestar.params import FromPath, FromQuery, JSONBody

from app.api.auth import PlatformDep, ProjectId
from app.api.pagination import DEFAULT_LIMIT, check_limit, decode_cursor, next_cursor, parse_id
from app.api.runs import RunGate, gate_fields
from app.domain.agent_calls import Attempt
from app.domain.case_results import StoredResult as DomainStoredResult
from app.domain.judging import JudgeRecord
from app.domain.results import CaseResult, CheckResult, UngradedItem
from app.services import ci_results, runs
from app.services.ci_results import PostedResult

# Results come in batches; a batch of 10,000 cases with their replies fits well within this.
MAX_RESULTS_BODY_BYTES = 32 * 1024 * 1024
Outcome = Literal["passed", "failed", "not_graded"]


class ResultsPost(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A batch of results for a CI-mode run."""

    run_id: str
    results: Annotated[list[PostedResult], msgspec.Meta(max_length=100_000)]
    wait_s: Annotated[float, msgspec.Meta(ge=0, le=120)] | None = None


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


class ResultPage(msgspec.Struct, kw_only=True):
    """A page of a run's results."""

    items: list[StoredResult]
    next_cursor: str | None


def graded_fields(test_case_id: str, result: CaseResult) -> dict[str, Any]:
    """The GradedResult fields of a case's grade."""
    return {
        "test_case_id": test_case_id,
        "graded": result.graded,
        "pass_fail": result.pass_fail,
        "score": result.score,
        "partially_graded": result.partially_graded,
        "judge_reasoning": result.judge_reasoning,
        "check_results": result.check_results,
        "ungraded_items": result.ungraded_items,
    }


def stored_result_out(stored: DomainStoredResult) -> StoredResult:
    """The API shape of a stored case result."""
    call = stored.agent_call
    return StoredResult(
        **graded_fields(str(stored.test_case_id), stored.result),
        trial=stored.trial,
        outcome=stored.outcome,
        judge_pending=stored.judge_pending,
        judge=stored.judge_records,
        actual_output=stored.reported.actual_output,
        actual_tool_calls=stored.reported.actual_tool_calls,
        agent_call=None
        if call is None
        else AgentCall(latency_ms=call.latency_ms, attempts=call.attempts, error=call.error),
    )


class RunResultsController(Controller):
    """The case results of one run, a page at a time."""

    path = "/eval-runs/{run_id:str}/results"
    tags = ("runs",)

    @get(operation_id="listRunResults")
    async def results(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        run_id: FromPath[str],
        outcome: FromQuery[Outcome | None] = None,
        limit: FromQuery[int] = DEFAULT_LIMIT,
        cursor: FromQuery[str | None] = None,
    ) -> ResultPage:
        """The run's case results with what the agent did, a page at a time."""
        limit = check_limit(limit)
        page = await runs.list_results(
            platform, project_id, parse_id(run_id, "run"), decode_cursor(cursor), outcome,
            limit + 1,
        )  # fmt: skip
        return ResultPage(
            items=[stored_result_out(stored) for stored in page[:limit]],
            next_cursor=next_cursor([stored.seq for stored in page], limit),
        )


class PostedResultsController(Controller):
    """Results a CI client posts."""

    path = "/eval-run-results"
    tags = ("runs",)

    @post(
        operation_id="postRunResults",
        request_max_body_size=MAX_RESULTS_BODY_BYTES,
        status_code=200,
        opt={"too_large_hint": "Post the results in several smaller batches."},
    )
    async def post_results(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        data: JSONBody[ResultsPost],
    ) -> Response[ResultsAnswer | StillJudging]:
        """Grade a batch; the answer holds the run's gate and each case's grade (202 when the
        AI judge is still judging: long-poll the run)."""
        run_id = parse_id(data.run_id, "run")
        batch = await ci_results.record_and_judge(
            platform, project_id, run_id, data.results, data.wait_s
        )
        if batch.waiting:
            detail = (
                "The results are stored; the AI judge is still judging. Follow the run with "
                f"GET /api/v1/eval-runs/{run_id}?wait_s=60, then read its results."
            )
            return Response(StillJudging(**gate_fields(batch.run), detail=detail), status_code=202)
        answer = ResultsAnswer(
            **gate_fields(batch.run),
            results=[
                GradedResult(**graded_fields(case.test_case_id, case.result))
                for case in batch.graded
            ],
        )
        return Response(answer, status_code=200)
