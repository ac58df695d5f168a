"""Recording what a CI client's agent did: grade, store, update the run, wait for the judge."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Annotated, Any
from uuid import UUID

import msgspec

from agentlasso.coordination.run_watch import Subscription
from agentlasso.db import case_results, pinned_cases
from agentlasso.db import runs as run_rows
from agentlasso.domain.case_results import NewResult, Reported, StoredResult
from agentlasso.domain.conversations import MAX_SCRIPTED_TURNS, MAX_SIMULATED_TURNS, EndedBy
from agentlasso.domain.grades import CaseResult
from agentlasso.domain.runs import ChunkRef, Counters, Run
from agentlasso.domain.stored_text import nul_problems
from agentlasso.domain.test_cases import PinnedCase
from agentlasso.domain.trace_context import TraceId
from agentlasso.errors import FieldError, InvalidInput, NotFound
from agentlasso.off_loop import off_loop_when_many
from agentlasso.queue import enqueue_quietly
from agentlasso.schemas.run_results import PostedTurn
from agentlasso.services import ci_conversations, judge_settings
from agentlasso.services.ci_conversations import PostedConversation
from agentlasso.services.grading_pool import batch_budget_s, grade_off_loop
from agentlasso.services.platform import Platform
from agentlasso.services.recording import BatchRecording, Reply, RunGrading, grade, store
from agentlasso.services.run_settling import settle_run

# A client may ask to wait longer than the server's default, up to this.
MAX_JUDGE_WAIT_S = 120


class PostedResult(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, gc=False):
    """One case's result as a client posted it; absent fields stay UNSET.

    What the agent said and did is kept as the JSON it came as, read only while its case is
    graded and stored as it is: otherwise a batch holds tens of thousands of lists and dicts,
    which every garbage collection walks (pausing every request) while the batch is handled."""

    test_case_id: str
    actual_output: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    actual_tool_calls: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    # An extension for clients like `agentlasso ci`: the call to the agent failed, and why.
    # For a conversation: it could not be played out (its turns so far may come with it), and
    # it is not graded, with this reason.
    agent_error: Annotated[str, msgspec.Meta(max_length=2000)] | None = None
    # How long the client's call to its agent took (latency_below grades it; without it, not).
    latency_ms: Annotated[int, msgspec.Meta(ge=0, le=2_147_483_647)] | None = None
    # The W3C trace id of the traceparent the client's call to its agent carried (section 14).
    agent_trace_id: TraceId | None = None
    # A conversation case's result (contract section 13): each turn, and how it ended.
    turns: (
        Annotated[
            tuple[PostedTurn, ...],
            msgspec.Meta(max_length=MAX_SCRIPTED_TURNS + MAX_SIMULATED_TURNS),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    ended_by: EndedBy | msgspec.UnsetType = msgspec.UNSET

    def reported(self) -> Reported:
        """What the agent did, as posted."""
        return Reported(
            actual_output=self.actual_output,
            actual_tool_calls=self.actual_tool_calls,
            latency_ms=self.latency_ms,
        )

    def conversation(self) -> PostedConversation:
        """What it says about a conversation, with the single-turn fields it also holds."""
        single = (
            ("actual_output", self.actual_output),
            ("actual_tool_calls", self.actual_tool_calls),
        )
        return PostedConversation(
            turns=self.turns,
            ended_by=self.ended_by,
            single_turn_fields=tuple(name for name, value in single if value is not msgspec.UNSET),
            unplayed=self.agent_error,
        )


class GradedCase(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A posted case with its grade."""

    test_case_id: str
    result: CaseResult


class RecordedBatch(msgspec.Struct, frozen=True, kw_only=True):
    """The run after a batch, and the grade of every case in the batch."""

    run: Run
    graded: list[GradedCase]
    # The ids of the graded cases, in the batch's order.
    case_ids: list[UUID] = msgspec.field(default_factory=list)
    # Judge chunks to enqueue once stored, for the cases whose judge checks wait for verdicts.
    judge_work: list[ChunkRef] = msgspec.field(default_factory=list)
    # The wait for verdicts ran out: the grades are provisional, the client long-polls the run.
    waiting: bool = False


def batch_problems(results: list[PostedResult]) -> list[FieldError]:
    """Cases posted twice in one batch (the second and later occurrences), and error texts that
    cannot be stored (what the agent answered is stored as it came, whatever it holds)."""
    seen: set[str] = set()
    problems = []
    for index, posted in enumerate(results):
        if posted.agent_error is not None and "\x00" in posted.agent_error:
            problems += nul_problems({"agent_error": posted.agent_error}, f"/results/{index}")
        if posted.test_case_id in seen:
            problems.append(
                FieldError(
                    pointer=f"/results/{index}/test_case_id",
                    detail=f"Test case {posted.test_case_id} is posted twice in this batch.",
                )
            )
        seen.add(posted.test_case_id)
    return problems


def posted_reply(case: PinnedCase, posted: PostedResult) -> Reply:
    """A posted result as the recording path takes it: what it reports, decoded to grade; a
    conversation's turns as the conversation played."""
    conversation = case.content.conversation
    if conversation is not None:
        played = ci_conversations.played_of(conversation, posted.conversation())
        return Reply(
            case=case, trial=1, actual_output=msgspec.UNSET, actual_tool_calls=msgspec.UNSET,
            reported=ci_conversations.reported_of(played),
            agent_error=ci_conversations.agent_error_of(played),
            played=played,
        )  # fmt: skip
    return Reply(
        case=case, trial=1, actual_output=_read(posted.actual_output),
        actual_tool_calls=_read(posted.actual_tool_calls), reported=posted.reported(),
        agent_error=posted.agent_error, agent_trace_id=posted.agent_trace_id,
    )  # fmt: skip


class _CheckedBatch(msgspec.Struct, frozen=True):
    """A batch's problems, and each posted case's id as a UUID (None when it is not one)."""

    problems: list[FieldError]
    parsed: list[UUID | None]
    case_ids: list[UUID]


def _read(raw: msgspec.Raw | msgspec.UnsetType) -> Any:
    return raw if raw is msgspec.UNSET else msgspec.json.decode(raw)


def _check_batch(results: list[PostedResult]) -> _CheckedBatch:
    parsed: list[UUID | None] = []
    for posted in results:
        try:
            parsed.append(UUID(posted.test_case_id))
        except ValueError:
            parsed.append(None)
    case_ids = [case_id for case_id in parsed if case_id is not None]
    return _CheckedBatch(batch_problems(results), parsed, case_ids)


def _not_in_run(
    results: list[PostedResult], parsed: list[UUID | None], pinned: Mapping[UUID, PinnedCase]
) -> list[FieldError]:
    return [
        FieldError(
            pointer=f"/results/{index}/test_case_id",
            detail=f"Test case {posted.test_case_id} is not in this run.",
        )
        for index, (posted, case_id) in enumerate(zip(results, parsed, strict=True))
        if case_id is None or case_id not in pinned
    ]


async def record_results(
    platform: Platform, project_id: UUID, run_id: UUID, results: list[PostedResult]
) -> RecordedBatch:
    """Grade and store a batch; a case posted again replaces its earlier result.

    Every pass over the batch runs off the event loop (a batch may hold 10,000 results)."""
    checked = await off_loop_when_many(len(results), lambda: _check_batch(results))
    if checked.problems:
        raise InvalidInput("Some posted results cannot be recorded.", checked.problems)
    judge_configured = await judge_settings.judge_configured(platform, project_id)
    async with platform.pool.acquire() as connection:
        run = await run_rows.get_run(connection, project_id, run_id)
        if run is None:
            raise NotFound("No run with this id in your project.")
        pinned = await pinned_cases.pinned_cases_by_id(connection, run_id, checked.case_ids)
        tools = await run_rows.declared_tools(connection, run_id)
    grading = RunGrading(run_id=run_id, judge_configured=judge_configured, declared_tools=tools)
    # Graded with no connection held: a hostile pattern may take the whole budget.
    graded = await grade_off_loop(
        lambda out_of_time: _grade_batch(grading, results, checked.parsed, pinned, out_of_time),
        batch_budget_s(platform.settings.grading_budget_s, len(results)),
    )
    recording = BatchRecording(project_id, checked.case_ids, graded.counts)
    async with platform.pool.acquire() as connection, connection.transaction():
        stored = await store(connection, run_id, graded.rows, recording)
    assert stored is not None, "a batch is stored, or refused"
    assert stored.run is not None, "a batch settles its run"
    return RecordedBatch(
        run=stored.run, graded=graded.cases, case_ids=checked.case_ids,
        judge_work=stored.judge_work,
    )  # fmt: skip


class _GradedBatch(msgspec.Struct, frozen=True):
    """A batch graded: the answer's cases, the rows to store, and what they count for."""

    cases: list[GradedCase]
    rows: list[NewResult]
    counts: Counters


def _grade_batch(
    run: RunGrading,
    results: list[PostedResult],
    parsed: list[UUID | None],
    pinned: Mapping[UUID, PinnedCase],
    out_of_time: Callable[[], bool],
) -> _GradedBatch:
    missing = _not_in_run(results, parsed, pinned)
    if missing:
        raise InvalidInput(f"{len(missing)} posted test case(s) are not in this run.", missing)
    wrong_kind = [
        problem
        for index, (posted, case_id) in enumerate(zip(results, parsed, strict=True))
        if case_id is not None
        for problem in ci_conversations.kind_problems(
            f"/results/{index}", pinned[case_id], posted.conversation()
        )
    ]
    if wrong_kind:
        raise InvalidInput("Some posted results do not fit their cases.", wrong_kind)
    graded: list[GradedCase] = []
    new_results: list[NewResult] = []
    for posted, case_id in zip(results, parsed, strict=True):
        assert case_id is not None
        reply = posted_reply(pinned[case_id], posted)
        result, row = grade(run, reply, out_of_time)
        graded.append(GradedCase(test_case_id=posted.test_case_id, result=result))
        new_results.append(row)
    counts = Counters.counting(result.flags() for result in new_results)
    return _GradedBatch(graded, new_results, counts)


async def record_and_judge(
    platform: Platform,
    project_id: UUID,
    run_id: UUID,
    results: list[PostedResult],
    wait_s: float | None,
) -> RecordedBatch:
    """Record a batch; when its judge checks wait for verdicts, wait for them, bounded."""
    batch = await record_results(platform, project_id, run_id, results)
    if not batch.judge_work:
        return batch
    settings = platform.settings
    case_ids = batch.case_ids
    limit_s = settings.judge_wait_s if wait_s is None else min(wait_s, MAX_JUDGE_WAIT_S)
    async with platform.watcher.subscribe(run_id, project_id) as events:
        # Subscribed before the work is queued, so no verdict can land unseen.
        await enqueue_quietly(platform.queue, settings.queue_name, batch.judge_work)
        judged = await _verdicts_in(platform, events, run_id, case_ids, limit_s)
    run = await settle_run(platform.pool, run_id)
    assert run is not None
    if not judged:
        return RecordedBatch(run=run, graded=batch.graded, waiting=True)
    stored = await case_results.results_of_cases(platform.pool, run_id, case_ids)
    graded = await off_loop_when_many(len(stored), lambda: _judged(batch.graded, stored))
    return RecordedBatch(run=run, graded=graded, case_ids=case_ids)


def _judged(graded: list[GradedCase], stored: list[StoredResult]) -> list[GradedCase]:
    """The batch's cases, in its order, with their grades as stored after judging."""
    by_id = {result.test_case_id: result.result for result in stored}
    return [
        GradedCase(test_case_id=case.test_case_id, result=by_id[UUID(case.test_case_id)])
        for case in graded
    ]


async def _verdicts_in(
    platform: Platform,
    events: Subscription,
    run_id: UUID,
    case_ids: list[UUID],
    limit_s: float,
) -> bool:
    """Wait until none of these cases waits for the judge; False when time runs out first."""
    deadline = asyncio.get_running_loop().time() + limit_s
    while True:
        if not await case_results.pending_seqs(platform.pool, run_id, case_ids):
            return True
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return False
        try:
            event = await asyncio.wait_for(events.get(), remaining)
        except TimeoutError:
            return False
        if event.kind == "shutdown":
            return False
