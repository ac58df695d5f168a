"""Recording graded results: the one path by which an agent's reply to a case is graded, stored,
counted and announced, in either mode.

A CI client posts its agent's replies in batches (app/services/ci_results.py); a worker's lane
has a chunk's replies from its own calls (workers/lanes.py). Both grade each reply with `grade`
and store what they graded with `store`. What differs is who holds the results while they go
in, and so what makes a second attempt safe:

- a lane's chunk (ChunkRecording) goes in under the chunk's row: the results are inserted in
  the transaction that marks the chunk done, each (case, trial) once, so a chunk redone after
  its worker died stores and counts nothing twice. It never takes the run's row lock, which
  every lane of the run would queue on: its counts go to a tally of its own, and the run settles
  after the commits (app/services/run_settling.py).
- a CI batch (BatchRecording) goes in under the run's row lock, which serialises the run's
  batches: a case posted again replaces its earlier result (what that counted for is taken
  off), and the batch settles the run in its own transaction, holding the lock already.

A case whose AI judge checks wait for verdicts is stored with a provisional grade; a judge
chunk (workers/judge_chunks.py) then grades it again with the verdicts (`regrade`) and puts
the final grade in its place (`store_verdicts`), counting what changed in the run's tallies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol
from uuid import UUID

import asyncpg
import msgspec

from agentlasso.agents import AgentCallResult
from agentlasso.db import case_results, run_counts, run_gates
from agentlasso.db import chunks as chunk_rows
from agentlasso.db import runs as run_rows
from agentlasso.db.pool import Connection
from agentlasso.db.run_counts import JudgeSpend
from agentlasso.domain.agent_calls import AgentCall
from agentlasso.domain.case_results import (
    AwaitingJudge,
    JudgedResult,
    NewResult,
    Played,
    Reported,
)
from agentlasso.domain.grades import CaseResult, DeclaredTools, JudgeVerdict
from agentlasso.domain.runs import ChunkRef, Counters, Run
from agentlasso.domain.test_cases import PinnedCase
from agentlasso.errors import Conflict
from agentlasso.grading import Answer, grade_answer, observation_from_wire
from agentlasso.judge.judging import immediate_verdicts
from agentlasso.queue import QueueConnection, enqueue_quietly
from agentlasso.services.grading_pool import grade_off_loop

# Cases per judge chunk from a CI batch: small, so verdicts for a batch spread over the workers.
# A lane's chunk is small already: its cases waiting for the judge make one judge chunk.
BATCH_JUDGE_CHUNK = 10


class CaseTrial(msgspec.Struct, frozen=True):
    """One trial of a pinned case: what a lane calls the agent for."""

    trial: int
    case: PinnedCase


class Reply(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What an agent did for one trial of a pinned case: what is graded, and what is stored."""

    case: PinnedCase
    trial: int
    # What is graded; UNSET when it was not reported.
    actual_output: Any
    actual_tool_calls: Any
    # What is stored, as it came (a CI client's JSON is kept as it was posted).
    reported: Reported
    agent_error: str | None
    # Server mode only: the platform's call to the agent.
    agent_call: AgentCall | None = None
    # A conversation case: how it was played (actual_output is then its final reply).
    played: Played | None = None
    # The W3C trace id the agent call carried (a single-turn case; section 14).
    agent_trace_id: str | None = None

    @classmethod
    def answered(cls, case: PinnedCase, trial: int, call: AgentCallResult) -> Reply:
        """A worker's call to the agent, answered (or failed)."""
        return cls(
            case=case, trial=trial, actual_output=call.actual_output,
            actual_tool_calls=call.actual_tool_calls, reported=call.reported(),
            agent_error=call.error, agent_call=call.call_record(),
            agent_trace_id=call.agent_trace_id,
        )  # fmt: skip


class RunGrading(msgspec.Struct, frozen=True, kw_only=True):
    """What grading a run's replies needs to know of the run, read once per chunk or batch."""

    run_id: UUID
    # Whether its AI judge checks wait for a judge (the server's key, or the project's own).
    judge_configured: bool
    # The input schemas of the agent's declared tools, taken when the run started.
    declared_tools: DeclaredTools | None = None


def grade(
    run: RunGrading, reply: Reply, out_of_time: Callable[[], bool]
) -> tuple[CaseResult, NewResult]:
    """The reply's grade, and its row; AI judge checks wait for a judge chunk when a judge is
    configured (the row is marked pending), and are not graded otherwise."""
    content = reply.case.content
    answer = answer_of(reply)
    verdicts, pending = immediate_verdicts(content, answer, run.judge_configured)
    result = grade_answer(content, answer, verdicts, out_of_time, run.declared_tools)
    return result, NewResult.graded_as(
        run.run_id, reply.case.test_case_id, reply.trial, reply.case.revision_id, result,
        reply.reported, agent_error=reply.agent_error, agent_call=reply.agent_call,
        judge_pending=pending, played=reply.played, agent_trace_id=reply.agent_trace_id,
    )  # fmt: skip


def answer_of(reply: Reply) -> Answer:
    """What is graded: the played conversation, or the one reply and its calls."""
    if reply.played is not None:
        return reply.played.conversation
    return observation_from_wire(
        reply.actual_output,
        reply.actual_tool_calls,
        agent_error=reply.agent_error,
        latency_ms=reply.reported.latency_ms,
    )


class Written(msgspec.Struct, frozen=True):
    """What a store's rows add to the run's counters, the rows that wait for the judge, and what
    the simulated users of the conversations it stored cost."""

    counts: Counters
    judging: list[int]
    spend: JudgeSpend | None = None


class Recording(Protocol):
    """Who holds a store's results while they go in: a lane's chunk, or a CI batch."""

    @property
    def judge_chunk(self) -> int:
        """Cases per judge chunk (0: all the store's cases that wait, in one)."""
        ...

    async def hold(self, connection: Connection, run_id: UUID) -> bool:
        """Take hold of what the results go in under; False when they are not to be stored."""
        ...

    async def write(
        self, connection: Connection, run_id: UUID, rows: Sequence[NewResult]
    ) -> Written:
        """Write the rows; what they count for."""
        ...

    async def announce(self, connection: Connection, run_id: UUID) -> Run | None:
        """Tell the run's waiters (when the transaction commits); the run, when it settled."""
        ...


class Recorded(msgspec.Struct, frozen=True):
    """A store committed: the run when the store settled it, and the judge work to enqueue."""

    run: Run | None
    judge_work: list[ChunkRef]


async def store(
    connection: Connection, run_id: UUID, rows: Sequence[NewResult], recording: Recording
) -> Recorded | None:
    """Store graded rows in their run, count them, make their judge chunks and announce them,
    in the caller's transaction; None when the rows are not to be stored. The judge work is the
    caller's to enqueue once the transaction has committed."""
    if not await recording.hold(connection, run_id):
        return None
    written = await recording.write(connection, run_id, rows)
    await run_counts.add(connection, run_id, written.counts, written.spend)
    judge_work = await _judge_chunks(connection, run_id, written.judging, recording.judge_chunk)
    return Recorded(await recording.announce(connection, run_id), judge_work)


def simulated_spend(rows: Sequence[NewResult]) -> JudgeSpend | None:
    """What the simulated users of these conversations cost, counted in the run's judge spend
    (they ask the judge's model); None when no row played one. A CI client's simulated user
    is counted by the endpoint that asks it, so its rows carry no usage.

    The run counts what its kept results cost, as it does the judge's verdicts: the calls of an
    attempt whose results were not stored (its worker died, or its chunk was retaken and done
    by another first) are spent on the key's daily budget as they are made, not in the run."""
    spends = [row.simulated_usage for row in rows if row.simulated_usage is not None]
    if not spends:
        return None
    return JudgeSpend(
        calls=sum(spend.calls for spend in spends),
        input_tokens=sum(spend.usage.input_tokens for spend in spends),
        output_tokens=sum(spend.usage.output_tokens for spend in spends),
        cache_read_tokens=sum(spend.usage.cache_read_input_tokens for spend in spends),
        cache_write_tokens=sum(spend.usage.cache_creation_input_tokens for spend in spends),
        cost_usd=sum(spend.cost_usd or 0.0 for spend in spends),
    )


async def _judge_chunks(
    connection: Connection, run_id: UUID, seqs: list[int], size: int
) -> list[ChunkRef]:
    """Judge chunks for the rows that wait for verdicts, `size` rows each (0: one chunk)."""
    if not seqs:
        return []
    size = size or len(seqs)
    return [
        await chunk_rows.create_judge_chunk(connection, run_id, seqs[start : start + size])
        for start in range(0, len(seqs), size)
    ]


class ChunkRecording(msgspec.Struct, frozen=True):
    """A lane's chunk: its results go in once, marked done with them under the chunk's row."""

    chunk_no: int
    job_id: str
    # Whether to notify progress now: waiters re-read the run at most a few times a second,
    # never once per chunk.
    progress_due: Callable[[], bool]
    judge_chunk: int = 0

    async def hold(self, connection: Connection, run_id: UUID) -> bool:
        """The chunk's row, marked done, or held when its job is not this one's any more (the
        chunk was retaken as stale meanwhile): its run cannot be deleted under the results
        (they have no foreign key to it), and a chunk whose run is gone stores nothing."""
        return await chunk_rows.finish(
            connection, run_id, self.chunk_no, self.job_id
        ) or await chunk_rows.hold(connection, run_id, self.chunk_no)

    async def write(
        self, connection: Connection, run_id: UUID, rows: Sequence[NewResult]
    ) -> Written:
        """The rows not stored yet: an attempt redoing the chunk waits on the results' keys,
        and counts none of them twice."""
        inserted = await case_results.insert_new(connection, rows)
        return Written(
            Counters.counting(stored.flags for stored in inserted),
            [stored.seq for stored in inserted if stored.flags.judge_pending],
            simulated_spend(_stored_rows(rows, inserted)),
        )

    async def announce(self, connection: Connection, run_id: UUID) -> Run | None:
        """Progress, when due; the run settles once the lane's stores have committed."""
        if self.progress_due():
            await run_rows.notify(connection, run_id, "progress")
        return None


def _stored_rows(
    rows: Sequence[NewResult], inserted: list[case_results.Inserted]
) -> Sequence[NewResult]:
    """The rows a write stored: all of them, but when another attempt of the chunk (retaken as
    stale) stored some first."""
    if len(inserted) == len(rows):
        return rows
    kept = {(stored.test_case_id, stored.trial) for stored in inserted}
    return [row for row in rows if (row.test_case_id, row.trial) in kept]


class BatchRecording(msgspec.Struct, frozen=True):
    """A CI batch: its results replace the cases' earlier ones, under the run's row lock."""

    project_id: UUID
    # The batch's cases, and what its rows count for (counted while they were graded).
    case_ids: list[UUID]
    counts: Counters
    judge_chunk: int = BATCH_JUDGE_CHUNK

    async def hold(self, connection: Connection, run_id: UUID) -> bool:
        """The run's row lock: it serialises the run's batches (a case posted in two batches
        at once is replaced once), and holds the run while results that have no foreign key to
        it go in. Conflict when the run takes no posted results."""
        run = await run_rows.lock_run(connection, self.project_id, run_id)
        assert run is not None, "the batch's run was read before it was graded"
        if run.status == "cancelled":
            raise Conflict("The run was cancelled; it takes no more results.")
        if run.mode != "ci":
            raise Conflict(
                "This run calls the agent itself (server mode); it takes no posted results."
            )
        return True

    async def write(
        self, connection: Connection, run_id: UUID, rows: Sequence[NewResult]
    ) -> Written:
        """The rows, in place of the cases' earlier results."""
        replaced = await case_results.delete_replaced(connection, run_id, 1, self.case_ids)
        await case_results.copy_results(connection, rows)
        waiting = self.counts.judge_pending > 0
        judging = (
            await case_results.pending_seqs(connection, run_id, self.case_ids) if waiting else []
        )
        return Written(
            self.counts.less(Counters.counting(replaced)), judging, simulated_spend(rows)
        )

    async def announce(self, connection: Connection, run_id: UUID) -> Run | None:
        """The run settled (its tallies taken in first), and its waiters told: long-polls and
        the run's page follow a CI run as its batches arrive (one NOTIFY a batch)."""
        run = await run_gates.store_gate(connection, await run_gates.take_in(connection, run_id))
        await run_rows.notify(connection, run_id, "final" if run.is_final else "progress")
        return run


async def record_chunk(
    pool: asyncpg.Pool,
    queue: tuple[QueueConnection, str],
    run: RunGrading,
    chunk: ChunkRecording,
    replies: Sequence[Reply],
    budget_s: float,
) -> None:
    """Grade a lane's replies (each a call answered, or a conversation played) off the event
    loop, store them under their chunk in one transaction, then queue their judge work on
    (queue connection, queue name)."""

    def grade_all(out_of_time: Callable[[], bool]) -> list[NewResult]:
        return [grade(run, reply, out_of_time)[1] for reply in replies]

    rows = await grade_off_loop(grade_all, budget_s)
    async with pool.acquire() as connection, connection.transaction():
        stored = await store(connection, run.run_id, rows, chunk)
    if stored is not None:
        await enqueue_quietly(*queue, stored.judge_work)


def regrade(
    case: AwaitingJudge,
    verdicts: dict[str, JudgeVerdict],
    out_of_time: Callable[[], bool],
    declared_tools: DeclaredTools | None,
) -> CaseResult:
    """A stored case's final grade: what its agent did, as stored, graded with the verdicts."""
    return grade_answer(case.content, stored_answer(case), verdicts, out_of_time, declared_tools)


def stored_answer(case: AwaitingJudge) -> Answer:
    """What a case waiting for the judge observed, read back from what was stored."""
    if case.played is not None:
        return case.played
    return observation_from_wire(
        case.reported.actual_output,
        case.reported.actual_tool_calls,
        agent_error=case.agent_error,
        latency_ms=case.reported.latency_ms,
    )


async def store_verdicts(
    connection: Connection,
    run_id: UUID,
    judged: Sequence[JudgedResult],
    spend_of: Callable[[Sequence[JudgedResult]], tuple[JudgeSpend, str | None]],
) -> None:
    """Final grades in place of the provisional ones, counting what they change and what their
    verdicts cost (`spend_of`: the spend, and why the run judges no more), in the caller's
    transaction. The run's row is neither updated nor locked: its tallies take the counts."""
    # Results replaced since (a CI client posting a case again) are no longer pending: the rows
    # are locked, so a batch replacing one now waits, and counts the final grade.
    still = {
        case.seq: case
        for case in await case_results.lock_pending(connection, run_id, [j.seq for j in judged])
    }
    judged = [case for case in judged if case.seq in still]
    if not judged:
        return
    await case_results.set_judged(connection, run_id, judged)
    before = [still[case.seq].flags for case in judged]
    after = [case.flags(still[case.seq].flags) for case in judged]
    spend, refused = spend_of(judged)
    await run_counts.add(connection, run_id, Counters.replacing(before, after), spend, refused)
