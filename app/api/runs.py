"""/api/v1/eval-runs: start a run, read it, follow it, cancel it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Controller, MediaType, Response, get, post
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody, QueryParameter
from litestar.response import ServerSentEvent, ServerSentEventMessage, Stream

from agentlasso.domain import runs as domain
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.test_cases import PinnedCase
from agentlasso.domain.tool_fixtures import fixtures_sent
from agentlasso.errors import FieldError, InvalidInput
from agentlasso.grading import plan_case
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    body_id,
    decode_cursor,
    next_cursor,
    parse_id,
)
from agentlasso.schemas.runs import (
    Counts,
    CreatedCiRun,
    CreatedServerRun,
    JudgeUsage,
    Run,
    RunCreate,
    RunPage,
    RunStatus,
    RunTestCase,
)
from agentlasso.services import runs, start_run
from agentlasso.services.platform import Platform
from agentlasso.services.run_events import run_events

# A long-poll may last this long at most.
MAX_WAIT_S = 120
# The cases of a new CI-mode run are read and sent this many at a time.
CASES_PER_PAGE = 500
_encoder = msgspec.json.Encoder()
RECONNECT_MS = 2000
WaitS = Annotated[
    float,
    QueryParameter(
        ge=0,
        le=MAX_WAIT_S,
        description="Answer as soon as the run ends, or after this many seconds.",
    ),
]
IdempotencyKey = Annotated[
    str | None, HeaderParameter(name="Idempotency-Key", max_length=255, required=False)
]


def run_web_url(public_url: str | None, run_id: UUID) -> str | None:
    """The absolute URL of the run's page in the web app (app/web/run_pages.py)."""
    return None if public_url is None else f"{public_url}/runs/{run_id}"


def gate_fields(run: domain.Run, public_url: str | None) -> dict[str, Any]:
    """The RunGate fields of a run; links are under the server's public URL, when it has one."""
    return {
        "run_id": str(run.id),
        "status": run.status,
        "pass_rate": run.pass_rate,
        "pass_threshold": run.pass_threshold,
        "ci_pass": run.ci_pass,
        "ci_fail_reason": run.ci_fail_reason,
        "counts": Counts(
            total=run.total,
            done=run.done,
            graded=run.graded,
            passed=run.passed,
            failed=run.failed,
            not_graded=run.not_graded,
            errored=run.errored,
        ),
        "judge": JudgeUsage(
            calls=run.judge_calls,
            cached=run.judge_cached,
            pending=run.judge_pending,
            input_tokens=run.judge_input_tokens,
            output_tokens=run.judge_output_tokens,
            cache_read_tokens=run.judge_cache_read_tokens,
            cache_write_tokens=run.judge_cache_write_tokens,
            cost_usd=round(run.judge_cost_usd, 6),
            stopped=run.judge_stopped,
        ),
        "web_url": run_web_url(public_url, run.id),
        "gate": run.gate,
        "baseline_run_id": None if run.baseline_run_id is None else str(run.baseline_run_id),
        "new_failures": run.new_failures,
        "pass_at_k_rate": run.pass_at_k_rate,
        "pass_all_k_rate": run.pass_all_k_rate,
        "flaky_count": run.flaky_count,
        "judge_warnings": run.judge_warnings or [],
    }


def _run_fields(run: domain.Run, public_url: str | None) -> dict[str, Any]:
    return dict(
        **gate_fields(run, public_url),
        dataset_id=str(run.dataset_id),
        mode=run.mode,
        agent_id=None if run.agent_id is None else str(run.agent_id),
        concurrency=run.concurrency,
        trials=run.trials,
        labels=run.labels,
        **_selection_fields(run),
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
    )


def _selection_fields(run: domain.Run) -> dict[str, Any]:
    """Which cases the run was asked to run: its tags and its dataset version."""
    version_id = run.dataset_version_id
    return {
        "tags": run.tags,
        "dataset_version_id": None if version_id is None else str(version_id),
        "dataset_version": run.dataset_version,
    }


def run_out(run: domain.Run, public_url: str | None) -> Run:
    """The API shape of a run."""
    return Run(**_run_fields(run, public_url))


def run_test_case(case: PinnedCase, dataset: Dataset) -> RunTestCase:
    """A pinned case as a CI client receives it; `checks` is what will be graded."""
    content = case.content
    return RunTestCase(
        test_case_id=str(case.test_case_id),
        input=content.input,
        evaluation_criteria_json=content.evaluation_criteria_json,
        checks_version=content.checks_version,
        checks=plan_case(content).checks,
        expected_output=content.expected_output,
        evaluation_type=content.evaluation_type,
        min_confidence=content.min_confidence,
        data_context=dataset.data_context,
        description=content.description,
        conversation=msgspec.UNSET if content.conversation is None else content.conversation,
        tool_fixtures=fixtures_sent(content.tool_fixtures) or msgspec.UNSET,
    )


async def _ci_run_body(
    platform: Platform, run: domain.Run, dataset: Dataset
) -> AsyncIterator[bytes]:
    """The CreatedCiRun JSON, its test_cases written out a page of cases at a time."""
    head = _encoder.encode(
        CreatedCiRun(
            run_id=str(run.id),
            status=run.status,
            pass_threshold=run.pass_threshold,
            total=run.total,
            web_url=run_web_url(platform.settings.public_url, run.id),
            gate=run.gate,
            baseline_run_id=None if run.baseline_run_id is None else str(run.baseline_run_id),
            **_selection_fields(run),
            test_cases=[],
        )
    )
    assert head.endswith(b"[]}"), "test_cases is the last field"
    yield head[:-2]
    separator = b""
    batch: list[bytes] = []
    async for case in start_run.pinned_cases(platform, run.id, CASES_PER_PAGE):
        batch.append(_encoder.encode(run_test_case(case, dataset)))
        if len(batch) == CASES_PER_PAGE:
            yield separator + b",".join(batch)
            separator, batch = b",", []
    if batch:
        yield separator + b",".join(batch)
    yield b"]}"


async def _sse_messages(
    first: tuple[str, domain.Run | None],
    rest: AsyncIterator[tuple[str, domain.Run | None]],
    public_url: str | None,
) -> AsyncIterator[ServerSentEventMessage]:
    """Each event as an SSE message whose data is the run, as GET /eval-runs/{id} shows it."""
    yield _message(*first, public_url)
    async for kind, run in rest:
        yield _message(kind, run, public_url)


def _message(kind: str, run: domain.Run | None, public_url: str | None) -> ServerSentEventMessage:
    if run is None:
        return ServerSentEventMessage(comment="keepalive")
    data = msgspec.json.encode(run_out(run, public_url)).decode()
    # `retry`: how soon EventSource reconnects when a stream ends before the run does.
    return ServerSentEventMessage(event=kind, data=data, retry=RECONNECT_MS)


def _new_run(data: RunCreate) -> start_run.NewRun:
    agent_id = None if data.agent_id is None else body_id(data.agent_id, "/agent_id", "agent")
    return start_run.NewRun(
        dataset_id=body_id(data.dataset_id, "/dataset_id", "dataset"),
        pass_threshold=data.pass_threshold,
        agent_id=agent_id,
        trials=data.trials,
        concurrency=data.concurrency,
        labels=data.labels,
        judge_cache=data.judge_cache,
        gate=data.gate,
        baseline_run_id=_baseline_id(data.baseline_run_id),
        # An empty list asks for no tag in particular: every case, as without it.
        tags=tuple(dict.fromkeys(data.tags)) if data.tags else None,
        dataset_version=data.dataset_version,
        tools=data.tools,
    )


def _baseline_id(raw: str | None) -> UUID | None:
    """The baseline the body names; an id of no run's shape is refused as any unknown run is
    (by the service: a 422 naming the field)."""
    if raw is None:
        return None
    try:
        return UUID(raw)
    except ValueError:
        detail = start_run.BAD_BASELINE
        raise InvalidInput(
            detail, [FieldError(pointer="/baseline_run_id", detail=detail)]
        ) from None


class RunController(Controller):
    """Runs of the caller's project."""

    path = "/eval-runs"
    tags = ("runs",)

    @post(operation_id="createRun")
    async def create(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        data: JSONBody[RunCreate],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[CreatedCiRun | CreatedServerRun] | Stream:
        """Start a run: with agent_id the platform calls the agent, else your CI does."""
        started = await start_run.start_run(platform, project_id, _new_run(data), idempotency_key)
        headers = {"idempotent-replayed": "true"} if started.replayed else {}
        run = started.run
        if run.mode == "server":
            fields = _run_fields(run, platform.settings.public_url)
            server_body = CreatedServerRun(**fields, total=run.total)
            return Response(server_body, status_code=201, headers=headers)
        # However many cases the dataset has, the answer is streamed a page at a time.
        body = _ci_run_body(platform, started.run, started.dataset)
        return Stream(body, status_code=201, headers=headers, media_type=MediaType.JSON)

    @get(operation_id="listRuns")
    async def list(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromQuery[str | None] = None,
        status: FromQuery[RunStatus | None] = None,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> RunPage:
        """The project's runs, newest first, optionally of one dataset or in one status."""
        dataset = None if dataset_id is None else parse_id(dataset_id, "dataset")
        before = decode_cursor(cursor) or None
        page = await runs.list_runs(platform, project_id, dataset, status, before, limit + 1)
        public_url = platform.settings.public_url
        return RunPage(
            items=[run_out(run, public_url) for run in page[:limit]],
            next_cursor=next_cursor([run.seq for run in page], limit),
        )

    @get("/{run_id:str}", operation_id="getRun")
    async def read(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        run_id: FromPath[str],
        wait_s: WaitS = 0.0,
    ) -> Run:
        """A run's status, counts and gate; with wait_s, as soon as it ends (or after wait_s)."""
        run = await runs.wait_for_run(platform, project_id, parse_id(run_id, "run"), wait_s)
        return run_out(run, platform.settings.public_url)

    @get("/{run_id:str}/events", operation_id="runEvents")
    async def events(
        self, platform: PlatformDep, project_id: ProjectId, run_id: FromPath[str]
    ) -> ServerSentEvent:
        """Server-Sent Events: `progress` as the run moves, then `final` with its gate."""
        stream = run_events(platform, project_id, parse_id(run_id, "run"))
        first = await anext(stream)  # a 404 for an unknown run, before the stream starts
        return ServerSentEvent(_sse_messages(first, stream, platform.settings.public_url))

    @post("/{run_id:str}/cancel", operation_id="cancelRun", status_code=200)
    async def cancel(
        self, platform: PlatformDep, project_id: ProjectId, run_id: FromPath[str]
    ) -> Run:
        """Stop a run; results so far are kept. Cancelling a finished run changes nothing."""
        run = await runs.cancel_run(platform, project_id, parse_id(run_id, "run"))
        return run_out(run, platform.settings.public_url)
