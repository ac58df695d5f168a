"""A lane: one job that works through a run's chunks one after another, in a worker.

A run has `concurrency / chunk_size` lanes; each calls the agent for a chunk's items at once,
grades them, stores them in one transaction, then takes the run's next pending chunk itself.
Every write is idempotent (a chunk done twice stores nothing the second time), so a lane that
dies is simply redone by another worker once the reaper sees its heartbeat stop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any
from uuid import UUID

import asyncpg
import msgspec
from redis.exceptions import RedisError

from agentlasso.agents import AgentCallResult, AgentTarget
from agentlasso.agents.address_guard import origin_of
from agentlasso.agents.headers import target_for
from agentlasso.db import agents as agent_rows
from agentlasso.db import case_results, pinned_cases, run_gates
from agentlasso.db import chunks as chunk_rows
from agentlasso.db import datasets as dataset_rows
from agentlasso.db import runs as run_rows
from agentlasso.domain.conversation_play import NextUser
from agentlasso.domain.runs import CALLING_STATUSES, MAX_CHUNK_SIZE, ChunkRef
from agentlasso.domain.tool_fixtures import fixtures_field
from agentlasso.grading import Gate
from agentlasso.observability import metrics
from agentlasso.observability.logs import bind_log_context, log_context
from agentlasso.queue import enqueue_quietly
from agentlasso.services.recording import CaseTrial, ChunkRecording, Reply, RunGrading, record_chunk
from agentlasso.services.run_settling import settle_run
from agentlasso_workers.conversations import most_calls, play_case
from agentlasso_workers.judge_chunks import judge_chunk
from agentlasso_workers.state import WorkerState

log = logging.getLogger("agentlasso.lanes")


class Held(msgspec.Struct, frozen=True):
    """A chunk a lane holds: which, under which job, and on which attempt."""

    chunk_no: int
    job_id: str
    attempt: int

    def of_run(self, run_id: UUID) -> ChunkRef:
        """The chunk as a job names it."""
        return ChunkRef(run_id, self.chunk_no, self.job_id)


class RunPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What a lane needs to know about its run, read once per lane."""

    run_id: UUID
    project_id: UUID
    total: int
    case_count: int
    chunk_size: int
    agent_id: UUID
    agent_limit: int | None
    target: AgentTarget
    context: dict[str, Any]
    # Whether its AI judge checks wait for a judge (the server's key, or the project's own),
    # and the agent's declared tools: how its replies are graded.
    grading: RunGrading
    # Plays a conversation's simulated user (None: such conversations end not graded).
    next_user: NextUser | None = None


async def run_lane(state: WorkerState, run_id: UUID, chunk_no: int, job_id: str) -> int:
    """Work through the run's chunks from this one until none is left; returns chunks done."""
    # Each job runs in a task of its own: what it logs from here on names its run.
    bind_log_context(run_id=run_id, job_id=job_id)
    # The lane counts as load from its start, before its run is read: arq asks for room again
    # within a tenth of a second, and must not start more lanes than this worker can serve.
    load = MAX_CHUNK_SIZE
    state.lane_calls += load
    try:
        claimed = await chunk_rows.claim(state.pool, run_id, chunk_no, job_id, state.worker_id)
        if claimed is None:
            return 0  # a stale duplicate job, or the chunk is already done
        metrics.CHUNKS_CLAIMED.labels(claimed.kind).inc()
        if claimed.kind == "judge":
            state.lane_calls -= load  # judge work waits on the judge's slots, not the agent's
            load = 0
            await judge_chunk(state, run_id, chunk_no, job_id, claimed.seqs)
            metrics.CHUNKS_DONE.labels("judge").inc()
            return 1
        plan = await _planned(state, run_id, ChunkRef(run_id, chunk_no, job_id))
        if plan is None:
            await _drop(state, run_id, chunk_no, job_id)
            return 0
        state.lane_calls += plan.chunk_size - load
        load = plan.chunk_size
        return await _work_through(state, plan, Held(chunk_no, job_id, claimed.attempt))
    finally:
        state.lane_calls -= load


async def _planned(state: WorkerState, run_id: UUID, first: ChunkRef) -> RunPlan | None:
    """The run marked running and its plan; a worker stopping meanwhile hands the lane's first
    chunk back at once, rather than leave it to the reaper."""
    try:
        await run_rows.mark_running(state.pool, run_id)
        return await _plan(state, run_id)
    except asyncio.CancelledError:
        await asyncio.shield(_hand_back(state, first))
        raise


async def _work_through(state: WorkerState, plan: RunPlan, first: Held) -> int:
    """The lane's chunks, one after another, until none is left for it; how many it did.

    A chunk's answers are graded and stored while the next chunk's calls are in flight: between
    two chunks the agent's slots wait for the next chunk's claim only, never for grading or a
    transaction. The next chunk is claimed before the one before is stored, so a lane holds a
    chunk from its start to its end, and one lost with its worker shows as a lane missing (the
    reaper replaces it). A failed store ends the lane once the chunk after it is stored."""
    current: Held | None = first
    previous: asyncio.Task[None] | None = None
    storing: asyncio.Task[None] | None = None
    done = 0
    try:
        while current is not None:
            with log_context(chunk_no=current.chunk_no):
                calls = await _calls_for(state, plan, current)
                answered = current
                try:
                    current = await _next_chunk(state, plan)
                finally:
                    # Claimed, or not: the answers in hand are stored either way.
                    previous, storing = (
                        storing,
                        state.store_in_background(_record(state, plan, answered, calls)),
                    )
            done += 1
            if previous is not None:
                await _await_store(state, plan, previous, current)
        if storing is not None:
            await asyncio.shield(storing)
        await _settle(state, plan.run_id)
    finally:
        # Stopping, or failing: the answers in hand are stored all the same.
        unfinished = {task for task in (previous, storing) if task and not task.done()}
        if unfinished:
            await asyncio.shield(asyncio.wait(unfinished))
    return done


async def _record(state: WorkerState, plan: RunPlan, held: Held, calls: list[Reply]) -> None:
    """Record the chunk's answers (graded, stored, counted, announced); the chunk is held, and
    its heartbeat sent, until they are."""
    run_id = plan.run_id
    chunk = ChunkRecording(
        held.chunk_no, held.job_id, lambda: state.progress_due(run_id, time.monotonic())
    )
    queue = (state.redis, state.settings.queue_name)
    try:
        await record_chunk(
            state.pool, queue, plan.grading, chunk, calls, state.settings.grading_budget_s
        )
        metrics.CHUNKS_DONE.labels("agent").inc()
    finally:
        state.held.discard((run_id, held.chunk_no))


async def _settle(state: WorkerState, run_id: UUID) -> None:
    """Every store of the lane has committed: if the run's last was among them, it settles now
    (a failure here is the reaper's to mend, within a round)."""
    try:
        await settle_run(state.pool, run_id)
    except (OSError, asyncpg.PostgresError):
        log.warning("could not settle run %s; the reaper will", run_id, exc_info=True)


async def _await_store(
    state: WorkerState, plan: RunPlan, store: asyncio.Task[None], claimed: Held | None
) -> None:
    """Wait for the chunk before's store: long done by now (the calls took longer).

    Shielded: a lane stopped here must not cancel a store whose answers are in hand. A lane
    that ends here (stopped, or the store failed) gives back the chunk it claimed next."""
    try:
        await asyncio.shield(store)
    except BaseException:
        if claimed is not None:
            await asyncio.shield(_hand_back(state, claimed.of_run(plan.run_id)))
        raise


async def _calls_for(state: WorkerState, plan: RunPlan, held: Held) -> list[Reply]:
    """The chunk's agent calls; hands the chunk back if the worker is stopping."""
    state.held.add((plan.run_id, held.chunk_no))
    answered = False
    try:
        items = await _items(state, plan, held)
        await _pace(state, plan, sum(most_calls(item) for item in items))
        calls = await _calls(state, plan, items, held.attempt)
        answered = True
        return calls
    except asyncio.CancelledError:
        # SIGTERM: give the chunk back, with a job of its own for another worker to take.
        await asyncio.shield(_hand_back(state, held.of_run(plan.run_id)))
        raise
    finally:
        if not answered:
            # Handed back, or its heartbeat stops (an error, a failed hand-back): then the
            # reaper gives it to another worker. Its store holds it from here otherwise.
            state.held.discard((plan.run_id, held.chunk_no))


async def _next_chunk(state: WorkerState, plan: RunPlan) -> Held | None:
    """The run's next chunk, claimed for this lane; or queued for another worker to take (the
    lane ends) when this one holds more than its share of the pool's work."""
    claiming = asyncio.ensure_future(
        chunk_rows.claim_next(state.pool, plan.run_id, state.worker_id)
    )
    try:
        claimed = await asyncio.shield(claiming)
    except asyncio.CancelledError:
        # Stopping: a chunk claimed in the meantime goes back to the queue at once.
        if (late := await claiming) is not None:
            await asyncio.shield(_hand_back(state, late[0]))
        raise
    if claimed is None:
        return None
    chunk, attempt = claimed
    if state.hand_over(plan.chunk_size):
        metrics.LANES_HANDED_OVER.inc()
        await asyncio.shield(_hand_back(state, chunk))
        return None
    metrics.CHUNKS_CLAIMED.labels("agent").inc()
    return Held(chunk.chunk_no, chunk.job_id, attempt)


async def _hand_back(state: WorkerState, chunk: ChunkRef) -> None:
    """Return an unfinished chunk to the queue. arq re-queues only the lane's own job, which
    cannot claim a later chunk of the lane: the chunk gets a job under its own job id."""
    if await chunk_rows.hand_back(state.pool, chunk.run_id, chunk.chunk_no, chunk.job_id):
        metrics.CHUNKS_HANDED_BACK.inc()
        await enqueue_quietly(state.redis, state.settings.queue_name, [chunk])


async def _drop(state: WorkerState, run_id: UUID, chunk_no: int, job_id: str) -> None:
    """A chunk of a run that cannot go on (cancelled, failed, gone): mark it done, take no more."""
    async with state.pool.acquire() as connection, connection.transaction():
        await chunk_rows.finish(connection, run_id, chunk_no, job_id)


async def _plan(state: WorkerState, run_id: UUID) -> RunPlan | None:
    """The run's agent and context, or None when the run is no longer going on."""
    run = await run_rows.run_by_id(state.pool, run_id)
    if run is None or run.status not in CALLING_STATUSES:
        return None
    # A deleted agent leaves the run's agent_id null.
    agent = (
        None
        if run.agent_id is None
        else await agent_rows.get_agent(state.pool, run.project_id, run.agent_id)
    )
    if agent is None:
        await _fail(state, run_id, "The agent was deleted while the run was going on.")
        return None
    dataset = await dataset_rows.get_dataset(state.pool, run.project_id, run.dataset_id)
    judge_client = await state.judge_clients.for_project(run.project_id)
    tools = await run_rows.declared_tools(state.pool, run_id)
    assert run.chunk_size is not None, "a server-mode run is chunked when it is created"
    return RunPlan(
        run_id=run_id,
        project_id=run.project_id,
        total=run.total,
        case_count=run.case_count,
        chunk_size=run.chunk_size,
        agent_id=agent.id,
        agent_limit=agent.max_concurrency,
        target=target_for(state.secret_key, agent),
        context=(dataset.data_context if dataset else None) or {},
        grading=RunGrading(
            run_id=run_id, judge_configured=judge_client is not None, declared_tools=tools
        ),
        next_user=None
        if state.simulated_users is None
        else await state.simulated_users.for_project(run.project_id),
    )


async def _items(state: WorkerState, plan: RunPlan, held: Held) -> list[CaseTrial]:
    """The chunk's (case, trial) items that have no result yet (all of them, but after a crash)."""
    first = held.chunk_no * plan.chunk_size
    indexes = range(first, min(first + plan.chunk_size, plan.total))
    # Items are trial-major: every case once, then every case again for trial 2, ...
    positions = sorted({index % plan.case_count + 1 for index in indexes})
    pinned = await pinned_cases.pinned_at_positions(state.pool, plan.run_id, positions)
    cases = {case.position: case for case in pinned}
    # A chunk's results are stored in the transaction that marks it done: before a second
    # attempt none of them can be there, so only a retry looks.
    done = (
        set()
        if held.attempt == 1
        else await case_results.existing(
            state.pool, plan.run_id, [case.test_case_id for case in cases.values()]
        )
    )
    items = [
        CaseTrial(index // plan.case_count + 1, cases[index % plan.case_count + 1])
        for index in indexes
    ]
    return [item for item in items if (item.case.test_case_id, item.trial) not in done]


async def _pace(state: WorkerState, plan: RunPlan, calls: int = 1) -> None:
    """The calls' turns under the project's quota a minute to the agent's host (all workers')."""
    try:
        await state.host_pacer.turn(f"{plan.project_id}:{_host(plan.target.url)}", calls)
    except (RedisError, OSError):  # unpaced, rather than lose the chunk's conversations
        log.warning("agent calls are not paced: Redis did not answer", exc_info=True)


def _host(url: str) -> str:
    """Where calls to this URL go: its host and port."""
    return "{1}:{2}".format(*origin_of(url))


async def _calls(
    state: WorkerState, plan: RunPlan, items: list[CaseTrial], attempt: int
) -> list[Reply]:
    """Each item's agent call (a conversation's turns, one after another), made at once; a
    cancelled run stops early and keeps what finished."""
    tasks = [asyncio.create_task(_call(state, plan, item, attempt)) for item in items]
    if not tasks:
        return []
    stop: asyncio.Future[Any] = asyncio.ensure_future(state.cancelled(plan.run_id).wait())
    gathered: asyncio.Future[Any] = asyncio.gather(*tasks, return_exceptions=True)
    try:
        await asyncio.wait({gathered, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        for task in tasks:
            task.cancel()  # no-op for finished ones; a cancelled run keeps what finished
        await asyncio.gather(gathered, return_exceptions=True)
    finished = [task for task in tasks if not task.cancelled()]
    for task in finished:
        if task.exception() is not None:
            # A bug, not an agent failure (those are results): never drop the item silently,
            # or the run could not complete. The chunk is retried, then the run fails.
            raise RuntimeError("an agent call of a chunk failed") from task.exception()
    return [task.result() for task in finished]


async def _call(state: WorkerState, plan: RunPlan, item: CaseTrial, attempt: int) -> Reply:
    """Call the agent for one item: once, or for each turn of its conversation."""
    case = item.case
    body = {
        "input": case.content.input,
        "source": "agentlasso-test",
        "test_case_id": str(case.test_case_id),
        "run_id": str(plan.run_id),
        "trial": item.trial,
        "context": plan.context,
        **fixtures_field(case.content.tool_fixtures),
    }

    async def call_agent(turn_body: dict[str, Any], _turn: int) -> AgentCallResult:
        return await _agent_call(state, plan, turn_body)  # the chunk took every turn's pace

    if case.content.conversation is not None:
        return await play_case(item, body, call_agent, plan.next_user, attempt)
    return Reply.answered(case, item.trial, await _agent_call(state, plan, body))


async def _agent_call(state: WorkerState, plan: RunPlan, body: dict[str, Any]) -> AgentCallResult:
    """One call to the run's agent, in this worker's slots (and the agent's, when limited)."""
    if plan.agent_limit is None:  # the usual case, without the shared lease's round trips
        async with state.calls.slot(plan.project_id):
            return await state.agent_client.call(plan.target, body)
    # The agent's slot first: waiting on it must not hold one of this worker's call slots.
    async with (
        state.limiter.slot(plan.agent_id, plan.agent_limit),
        state.calls.slot(plan.project_id),
    ):
        return await state.agent_client.call(plan.target, body)


async def _fail(state: WorkerState, run_id: UUID, reason: str) -> None:
    async with state.pool.acquire() as connection, connection.transaction():
        run = await run_rows.lock_run_by_id(connection, run_id)
        if run is None or run.is_final:
            return
        run = await run_gates.take_in(connection, run_id)
        gate = Gate(pass_rate=run.pass_rate, ci_pass=False, ci_fail_reason=reason)
        await run_rows.set_verdict(connection, run_id, "failed", gate)
        await run_rows.notify(connection, run_id, "final")
    metrics.RUNS_FINISHED.labels("failed").inc()
    log.warning("run %s failed: %s", run_id, reason)
