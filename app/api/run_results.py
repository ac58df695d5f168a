"""A run's case results: posted by a CI client (/api/v1/eval-run-results), and read back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Controller, MediaType, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.response import Stream

from agentlasso.api.runs import gate_fields
from agentlasso.domain.case_results import StoredResult as DomainStoredResult
from agentlasso.domain.case_results import TrialSummary
from agentlasso.domain.grades import CaseResult
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    decode_cursor,
    encode_cursor,
    parse_id,
)
from agentlasso.schemas.run_results import (
    AgentCall,
    GradedResult,
    Outcome,
    ResultPage,
    ResultsAnswer,
    StillJudging,
    StoredResult,
)
from agentlasso.services import ci_results, runs
from agentlasso.services.ci_results import PostedResult

# Results come in batches; a batch of 10,000 cases with their replies fits well within this.
MAX_RESULTS_BODY_BYTES = 32 * 1024 * 1024
# Results in one batch. A batch's objects stay alive while it is handled, and every garbage
# collection meanwhile walks them all, pausing every request: at 10,000 a pause stays near
# 50 ms (tests/perf/bench_hostile.py batch), at 100,000 it passed 150 ms.
MAX_RESULTS_PER_POST = 10_000
# A page of results ends before it grows past this (replies may be a megabyte each), with at
# least one result on it; next_cursor continues from there.
MAX_PAGE_BYTES = 8 * 1024 * 1024
# Graded cases encoded per chunk of a streamed answer.
ANSWER_SLICE = 1_000
_encoder = msgspec.json.Encoder()


class ResultsPost(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A batch of results for a CI-mode run."""

    run_id: str
    results: Annotated[list[PostedResult], msgspec.Meta(max_length=MAX_RESULTS_PER_POST)]
    wait_s: Annotated[float, msgspec.Meta(ge=0, le=120)] | None = None


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


def stored_result_out(stored: DomainStoredResult, trials: TrialSummary | None) -> StoredResult:
    """The API shape of a stored case result (with its case's trials taken together, when
    known)."""
    call = stored.agent_call
    return StoredResult(
        pass_at_k=None if trials is None else trials.pass_at_k,
        pass_all_k=None if trials is None else trials.pass_all_k,
        flaky=None if trials is None else trials.flaky,
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
        agent_trace_id=msgspec.UNSET if stored.agent_trace_id is None else stored.agent_trace_id,
        latency_ms=(
            msgspec.UNSET if stored.reported.latency_ms is None else stored.reported.latency_ms
        ),
        turns=msgspec.UNSET if stored.turns is None else stored.turns,
        ended_by=msgspec.UNSET if stored.ended_by is None else stored.ended_by,
        conversation_attempt=(
            msgspec.UNSET if stored.conversation_attempt is None else stored.conversation_attempt
        ),
        not_played_reason=(
            msgspec.UNSET if stored.not_played_reason is None else stored.not_played_reason
        ),
    )


def _page_bytes(
    page: list[DomainStoredResult], trials: dict[UUID, TrialSummary], limit: int
) -> bytes:
    """A ResultPage's JSON, its items cut at `limit` or before MAX_PAGE_BYTES."""
    items: list[bytes] = []
    size = 0
    for stored in page[:limit]:
        item = _encoder.encode(stored_result_out(stored, trials.get(stored.test_case_id)))
        if items and size + len(item) > MAX_PAGE_BYTES:
            break
        items.append(item)
        size += len(item)
    more = len(items) < len(page)
    cursor = encode_cursor(page[len(items) - 1].seq) if more and items else None
    return b'{"items":[' + b",".join(items) + b'],"next_cursor":' + _encoder.encode(cursor) + b"}"


class RunResultsController(Controller):
    """The case results of one run, a page at a time."""

    path = "/eval-runs/{run_id:str}/results"
    tags = ("runs",)

    @get(
        operation_id="listRunResults",
        # The page is encoded as it is filled (to stop short of MAX_PAGE_BYTES): its shape.
        responses={200: ResponseSpec(data_container=ResultPage, description="A page of results")},
    )
    async def results(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        run_id: FromPath[str],
        outcome: FromQuery[Outcome | None] = None,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> Response[bytes]:
        """The run's case results with what the agent did, a page at a time (a page holds
        `limit` results, or fewer when they would pass 8 MiB)."""
        page, trials = await runs.list_results(
            platform, project_id, parse_id(run_id, "run"), decode_cursor(cursor), outcome,
            limit + 1,
        )  # fmt: skip
        return Response(content=_page_bytes(page, trials, limit), media_type=MediaType.JSON)


class PostedResultsController(Controller):
    """Results a CI client posts."""

    path = "/eval-run-results"
    tags = ("runs",)

    @post(
        operation_id="postRunResults",
        request_max_body_size=MAX_RESULTS_BODY_BYTES,
        status_code=200,
        # The answer is encoded a slice at a time: its shape.
        responses={
            200: ResponseSpec(data_container=ResultsAnswer, description="The batch, graded")
        },
        opt={"too_large_hint": "Post the results in several smaller batches."},
    )
    async def post_results(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        data: JSONBody[ResultsPost],
    ) -> Response[StillJudging] | Stream:
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
            gate = gate_fields(batch.run, platform.settings.public_url)
            return Response(StillJudging(**gate, detail=detail), status_code=202)
        answer = _answer_chunks(batch, platform.settings.public_url)
        return Stream(answer, status_code=200, media_type=MediaType.JSON)


async def _answer_chunks(
    batch: ci_results.RecordedBatch, public_url: str | None
) -> AsyncIterator[bytes]:
    """A ResultsAnswer's JSON, encoded a slice of results at a time, letting other requests run
    between slices (encoded and written whole, 10,000 graded cases held the event loop for
    about 60 ms)."""
    head = _encoder.encode(ResultsAnswer(**gate_fields(batch.run, public_url), results=[]))
    assert head.endswith(b"[]}"), "results is the last field"
    yield head[:-2]
    for start in range(0, len(batch.graded), ANSWER_SLICE):
        cases = batch.graded[start : start + ANSWER_SLICE]
        encoded = b",".join(
            _encoder.encode(GradedResult(**graded_fields(case.test_case_id, case.result)))
            for case in cases
        )
        yield (b"," if start else b"") + encoded
        # The server only waits when the client reads slowly: let other requests run.
        await asyncio.sleep(0)
    yield b"]}"
