"""A chunk's answers graded and stored: the results, the chunk marked done, and their count.

A store never updates or locks its run's row, which every lane of the run would queue on: the
counts go to a tally row of its own (app/db/run_counts.py), and the run settles after the
commits (app/services/run_settling.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from uuid import UUID

import msgspec
from agentlasso.agents import AgentCallResult
from agentlasso.db import case_results, run_counts
from agentlasso.db import chunks as chunk_rows
from agentlasso.db import runs as run_rows
from agentlasso.domain.case_results import NewResult
from agentlasso.domain.runs import ChunkRef, Counters
from agentlasso.domain.test_cases import PinnedCase
from agentlasso.grading import grade_case, observation_from_wire
from agentlasso.judge.judging import immediate_verdicts
from agentlasso.observability import metrics
from agentlasso.queue import enqueue_quietly
from agentlasso.services.grading_pool import grade_off_loop
from agentlasso_workers.state import WorkerState


class Held(msgspec.Struct, frozen=True):
    """A chunk a lane holds: which, under which job, and on which attempt."""

    chunk_no: int
    job_id: str
    attempt: int

    def of_run(self, run_id: UUID) -> ChunkRef:
        """The chunk as a job names it."""
        return ChunkRef(run_id, self.chunk_no, self.job_id)


class Item(msgspec.Struct, frozen=True):
    """One agent call to make: a pinned case and a trial."""

    trial: int
    case: PinnedCase


async def grade_and_store(
    state: WorkerState,
    run_id: UUID,
    judge_configured: bool,
    held: Held,
    calls: list[tuple[Item, AgentCallResult]],
) -> None:
    """Grade the chunk's answers off the event loop, then store them."""

    def grade_all(out_of_time: Callable[[], bool]) -> list[NewResult]:
        return [_graded(run_id, item, call, judge_configured, out_of_time) for item, call in calls]

    try:
        results = await grade_off_loop(grade_all, state.settings.grading_budget_s)
        await _store(state, run_id, held, results)
        metrics.CHUNKS_DONE.labels("agent").inc()
    finally:
        state.held.discard((run_id, held.chunk_no))


def _graded(
    run_id: UUID,
    item: Item,
    call: AgentCallResult,
    judge_configured: bool,
    out_of_time: Callable[[], bool],
) -> NewResult:
    """The graded result; AI judge checks wait for a judge chunk when a judge is configured."""
    content = item.case.content
    observation = observation_from_wire(
        call.actual_output, call.actual_tool_calls, agent_error=call.error
    )
    verdicts, pending = immediate_verdicts(content, observation, judge_configured)
    return NewResult.graded_as(
        run_id, item.case.test_case_id, item.trial, item.case.revision_id,
        grade_case(content, observation, verdicts, out_of_time), call.reported(),
        agent_error=call.error,
        agent_call=call.call_record(), judge_pending=pending,
    )  # fmt: skip


async def _store(
    state: WorkerState, run_id: UUID, held: Held, results: Sequence[NewResult]
) -> None:
    """Store the chunk's results, mark it done and count them; one transaction.

    Nothing here updates or locks the run's row, which every lane of the run would queue on:
    the counts go to a tally row of the store's own (app/db/run_counts.py), and the run is
    settled after the commit (run_settling). The chunk's row is held first: its run cannot be
    deleted under the results (they have no foreign key to it), and a chunk whose run is gone
    stores nothing. An attempt redoing the chunk waits on the results' keys, and counts none of
    them twice."""
    async with state.pool.acquire() as connection, connection.transaction():
        if not await chunk_rows.finish(
            connection, run_id, held.chunk_no, held.job_id
        ) and not await chunk_rows.hold(connection, run_id, held.chunk_no):
            return
        inserted = await case_results.insert_new(connection, results)
        await run_counts.add(connection, run_id, Counters.counting(s.flags for s in inserted))
        judging = [stored.seq for stored in inserted if stored.flags.judge_pending]
        judge_work = (
            [await chunk_rows.create_judge_chunk(connection, run_id, judging)] if judging else []
        )
        if state.progress_due(run_id, time.monotonic()):
            # Waiters re-read the run: at most a few times a second, never once per chunk.
            await run_rows.notify(connection, run_id, "progress")
    await enqueue_quietly(state.redis, state.settings.queue_name, judge_work)
