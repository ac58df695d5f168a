"""/api/v1/eval-runs and /api/v1/eval-run-results (contract section 5)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import asyncpg
import msgspec
from litestar import Controller, Response, get, post
from litestar.datastructures import State
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody
from litestar.response import ServerSentEvent, ServerSentEventMessage

from app.api.auth import ProjectId
from app.api.pagination import DEFAULT_LIMIT, check_limit, decode_cursor, next_cursor, parse_id
from app.domain.checks import Check
from app.domain.results import CaseResult, CheckResult, UngradedItem
from app.domain.test_cases import CaseInput, EvaluationType
from app.errors import FieldError, InvalidInput
from app.grading import plan_case
from app.services import ci_results, runs, server_runs
from app.services.ci_results import PostedResult
from app.services.result_rows import case_result_of
from app.services.run_events import run_events
from app.services.test_cases import content_from_row

# Long-polls longer than this are refused (contract 5.3).
MAX_WAIT_S = 120
# Results come in batches; a batch of 10,000 cases with their replies fits well within this.
MAX_RESULTS_BODY_BYTES = 32 * 1024 * 1024
RunStatus = Literal[
    "queued", "running", "awaiting_results", "grading", "completed", "cancelled", "failed"
]
Outcome = Literal["passed", "failed", "not_graded"]
IdempotencyKey = Annotated[
    str | None, HeaderParameter(name="Idempotency-Key", max_length=255, required=False)
]


class RunCreate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Start a run of a dataset. Without agent_id the client calls its own agent (CI mode)."""

    dataset_id: str
    pass_threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] = 1.0
    agent_id: str | None = None
    trials: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1
    concurrency: Annotated[int, msgspec.Meta(ge=1, le=10_000)] | None = None
    labels: dict[str, Annotated[str, msgspec.Meta(max_length=500)]] | None = None
    # false: ask the AI judge afresh even for a request it has answered before.
    judge_cache: bool = True


class RunTestCase(msgspec.Struct, kw_only=True):
    """A case of a CI-mode run: what to send the agent and exactly what will be graded."""

    test_case_id: str
    input: CaseInput
    evaluation_criteria_json: dict[str, Any] | None
    checks_version: int
    checks: tuple[Check, ...]
    expected_output: str | None
    evaluation_type: EvaluationType
    min_confidence: int
    data_context: dict[str, Any] | None
    description: str | None


class Counts(msgspec.Struct, kw_only=True):
    """A run's progress."""

    total: int
    done: int
    graded: int
    passed: int
    failed: int
    not_graded: int
    errored: int


class JudgeUsage(msgspec.Struct, kw_only=True):
    """What the AI judge did for a run, and what it cost (from the server's price table)."""

    calls: int
    cached: int
    pending: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    stopped: str | None


class RunGate(msgspec.Struct, kw_only=True):
    """What every answer about a run says: its status, counts and CI gate."""

    run_id: str
    status: RunStatus
    pass_rate: float | None
    pass_threshold: float
    ci_pass: bool
    ci_fail_reason: str | None
    counts: Counts
    judge: JudgeUsage


class Run(RunGate, kw_only=True):
    """A run's status and gate, with what it runs."""

    dataset_id: str
    mode: Literal["ci", "server"]
    agent_id: str | None
    concurrency: int | None
    trials: int
    labels: dict[str, str] | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class CreatedServerRun(Run, kw_only=True):
    """The answer to starting a server-mode run: queued, the work not yet begun."""

    total: int


class CreatedCiRun(msgspec.Struct, kw_only=True):
    """The answer to starting a CI-mode run."""

    run_id: str
    status: RunStatus
    pass_threshold: float
    total: int
    test_cases: list[RunTestCase]


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
    attempts: Any
    error: str | None


class StoredResult(GradedResult, kw_only=True):
    """A stored case result, with what the agent did and what the AI judge said."""

    trial: int
    outcome: Outcome
    # True while its AI judge checks wait for verdicts: the grade is provisional.
    judge_pending: bool = False
    judge: Any = None
    actual_output: Any = msgspec.UNSET
    actual_tool_calls: Any = msgspec.UNSET
    agent_call: AgentCall | None = None


class RunPage(msgspec.Struct, kw_only=True):
    """A page of runs, newest first."""

    items: list[Run]
    next_cursor: str | None


class ResultPage(msgspec.Struct, kw_only=True):
    """A page of a run's results."""

    items: list[StoredResult]
    next_cursor: str | None


def counts_out(run: asyncpg.Record) -> Counts:
    """A run row's counters as the API shows them."""
    return Counts(
        total=run["total"],
        done=run["done"],
        graded=run["graded"],
        passed=run["passed"],
        failed=run["graded"] - run["passed"],
        not_graded=run["done"] - run["graded"],
        errored=run["errored"],
    )


def gate_fields(run: asyncpg.Record) -> dict[str, Any]:
    """The RunGate fields of a run row."""
    return {
        "run_id": str(run["id"]),
        "status": run["status"],
        "pass_rate": run["pass_rate"],
        "pass_threshold": run["pass_threshold"],
        "ci_pass": run["ci_pass"],
        "ci_fail_reason": run["ci_fail_reason"],
        "counts": counts_out(run),
        "judge": JudgeUsage(
            calls=run["judge_calls"],
            cached=run["judge_cached"],
            pending=run["judge_pending"],
            input_tokens=run["judge_input_tokens"],
            output_tokens=run["judge_output_tokens"],
            cache_read_tokens=run["judge_cache_read_tokens"],
            cache_write_tokens=run["judge_cache_write_tokens"],
            cost_usd=round(run["judge_cost_usd"], 6),
            stopped=run["judge_stopped"],
        ),
    }


def run_out(run: asyncpg.Record) -> Run:
    """The API shape of a run row."""
    return Run(**_run_fields(run))


def _run_fields(run: asyncpg.Record) -> dict[str, Any]:
    return dict(
        **gate_fields(run),
        dataset_id=str(run["dataset_id"]),
        mode=run["mode"],
        agent_id=None if run["agent_id"] is None else str(run["agent_id"]),
        concurrency=run["concurrency"],
        trials=run["trials"],
        labels=run["labels"],
        created_at=run["created_at"],
        started_at=run["started_at"],
        finished_at=run["finished_at"],
    )


def run_test_case(row: asyncpg.Record, data_context: dict[str, Any] | None) -> RunTestCase:
    """A pinned case as a CI client receives it; `checks` is what will be graded."""
    content = content_from_row(row)
    return RunTestCase(
        test_case_id=str(row["test_case_id"]),
        input=content.input,
        evaluation_criteria_json=content.evaluation_criteria_json,
        checks_version=content.checks_version,
        checks=plan_case(content).checks,
        expected_output=content.expected_output,
        evaluation_type=content.evaluation_type,
        min_confidence=content.min_confidence,
        data_context=data_context,
        description=content.description,
    )


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


def stored_result_out(row: asyncpg.Record) -> StoredResult:
    """The API shape of a case_results row."""
    server_mode = row["agent_attempts"] is not None
    return StoredResult(
        **graded_fields(str(row["test_case_id"]), case_result_of(row)),
        trial=row["trial"],
        outcome=row["outcome"],
        judge_pending=row["judge_pending"],
        judge=row["judge_records"],
        actual_output=row["actual_output"] if row["output_reported"] else msgspec.UNSET,
        actual_tool_calls=row["actual_tool_calls"] if row["tool_calls_reported"] else msgspec.UNSET,
        agent_call=AgentCall(
            latency_ms=row["agent_latency_ms"],
            attempts=row["agent_attempts"],
            error=row["agent_error"],
        )
        if server_mode
        else None,
    )


async def _sse_messages(
    first: tuple[str, asyncpg.Record | None],
    rest: AsyncIterator[tuple[str, asyncpg.Record | None]],
) -> AsyncIterator[ServerSentEventMessage]:
    """Each event as an SSE message whose data is the run, as GET /eval-runs/{id} shows it."""
    yield _message(*first)
    async for kind, run in rest:
        yield _message(kind, run)


def _message(kind: str, run: asyncpg.Record | None) -> ServerSentEventMessage:
    if run is None:
        return ServerSentEventMessage(comment="keepalive")
    return ServerSentEventMessage(event=kind, data=msgspec.json.encode(run_out(run)).decode())


def _wait_s(wait_s: float | None) -> float:
    if wait_s is None:
        return 0.0
    if not 0 <= wait_s <= MAX_WAIT_S:
        detail = f"wait_s must be between 0 and {MAX_WAIT_S} seconds."
        raise InvalidInput(detail, [FieldError(parameter="wait_s", detail=detail)])
    return wait_s


def _body_id(raw: str, pointer: str, what: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError:
        detail = f"No {what} with this id in your project."
        raise InvalidInput(detail, [FieldError(pointer=pointer, detail=detail)]) from None


class RunController(Controller):
    """Runs of the caller's project."""

    path = "/eval-runs"
    tags = ("runs",)

    @post(operation_id="createRun")
    async def create(
        self,
        state: State,
        project_id: ProjectId,
        data: JSONBody[RunCreate],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[CreatedCiRun | CreatedServerRun]:
        """Start a run: with agent_id the platform calls the agent, else your CI does."""
        request = runs.NewRun(
            dataset_id=_body_id(data.dataset_id, "/dataset_id", "dataset"),
            pass_threshold=data.pass_threshold,
            agent_id=None
            if data.agent_id is None
            else _body_id(data.agent_id, "/agent_id", "agent"),
            trials=data.trials,
            concurrency=data.concurrency,
            labels=data.labels,
            judge_cache=data.judge_cache,
        )
        headers = {}
        if request.agent_id is not None:
            created = await server_runs.create_server_run(
                state.pool, state.redis, state.settings.queue_name, project_id, request,
                idempotency_key,
            )  # fmt: skip
            if created.replayed:
                headers["idempotent-replayed"] = "true"
            server_body = CreatedServerRun(**_run_fields(created.run), total=created.run["total"])
            return Response(server_body, status_code=201, headers=headers)
        created = await runs.create_ci_run(state.pool, project_id, request, idempotency_key)
        cases = await runs.pinned_cases(state.pool, created.run["id"])
        body = CreatedCiRun(
            run_id=str(created.run["id"]),
            status=created.run["status"],
            pass_threshold=created.run["pass_threshold"],
            total=created.run["total"],
            test_cases=[run_test_case(row, created.data_context) for row in cases],
        )
        if created.replayed:
            headers["idempotent-replayed"] = "true"
        return Response(body, status_code=201, headers=headers)

    @get(operation_id="listRuns")
    async def list(
        self,
        state: State,
        project_id: ProjectId,
        dataset_id: FromQuery[str | None] = None,
        status: FromQuery[RunStatus | None] = None,
        limit: FromQuery[int] = DEFAULT_LIMIT,
        cursor: FromQuery[str | None] = None,
    ) -> RunPage:
        """The project's runs, newest first, optionally of one dataset or in one status."""
        limit = check_limit(limit)
        dataset = None if dataset_id is None else parse_id(dataset_id, "dataset")
        before = decode_cursor(cursor) or None
        rows = await runs.list_runs(state.pool, project_id, dataset, status, before, limit + 1)
        return RunPage(
            items=[run_out(row) for row in rows[:limit]],
            next_cursor=next_cursor([row["seq"] for row in rows], limit),
        )

    @get("/{run_id:str}", operation_id="getRun")
    async def read(
        self,
        state: State,
        project_id: ProjectId,
        run_id: FromPath[str],
        wait_s: FromQuery[float | None] = None,
    ) -> Run:
        """A run's status, counts and gate; with wait_s, as soon as it ends (or after wait_s)."""
        run = await runs.wait_for_run(
            state.pool, state.watcher, project_id, parse_id(run_id, "run"), _wait_s(wait_s)
        )
        return run_out(run)

    @get("/{run_id:str}/events", operation_id="runEvents")
    async def events(
        self, state: State, project_id: ProjectId, run_id: FromPath[str]
    ) -> ServerSentEvent:
        """Server-Sent Events: `progress` as the run moves, then `final` with its gate."""
        stream = run_events(state.pool, state.watcher, project_id, parse_id(run_id, "run"))
        first = await anext(stream)  # a 404 for an unknown run, before the stream starts
        return ServerSentEvent(_sse_messages(first, stream))

    @post("/{run_id:str}/cancel", operation_id="cancelRun", status_code=200)
    async def cancel(self, state: State, project_id: ProjectId, run_id: FromPath[str]) -> Run:
        """Stop a run; results so far are kept. Cancelling a finished run changes nothing."""
        return run_out(await runs.cancel_run(state.pool, project_id, parse_id(run_id, "run")))

    @get("/{run_id:str}/results", operation_id="listRunResults")
    async def results(
        self,
        state: State,
        project_id: ProjectId,
        run_id: FromPath[str],
        outcome: FromQuery[Outcome | None] = None,
        limit: FromQuery[int] = DEFAULT_LIMIT,
        cursor: FromQuery[str | None] = None,
    ) -> ResultPage:
        """The run's case results with what the agent did, a page at a time."""
        limit = check_limit(limit)
        rows = await runs.list_results(
            state.pool,
            project_id,
            parse_id(run_id, "run"),
            decode_cursor(cursor),
            outcome,
            limit + 1,
        )
        return ResultPage(
            items=[stored_result_out(row) for row in rows[:limit]],
            next_cursor=next_cursor([row["seq"] for row in rows], limit),
        )


class RunResultsController(Controller):
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
        self, state: State, project_id: ProjectId, data: JSONBody[ResultsPost]
    ) -> Response[ResultsAnswer | StillJudging]:
        """Grade a batch; the answer holds the run's gate and each case's grade (202 when the
        AI judge is still judging: long-poll the run)."""
        run_id = parse_id(data.run_id, "run")
        batch = await ci_results.record_and_judge(
            state.pool, state.redis, state.watcher, state.settings, project_id, run_id,
            data.results, data.wait_s,
        )  # fmt: skip
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
