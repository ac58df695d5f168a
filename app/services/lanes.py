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
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from app.agents import AgentCallResult, AgentTarget
from app.db import agents as agent_rows
from app.db import case_results as result_rows
from app.db import chunks as chunk_rows
from app.db import datasets as dataset_rows
from app.db import runs as run_rows
from app.db.pool import Connection
from app.grading import grade_case, observation_from_wire
from app.services.agents import agent_target
from app.services.judge_chunks import judge_chunk
from app.services.judging import immediate_verdicts
from app.services.result_rows import counter_delta, result_row
from app.services.runs import FINAL_STATUSES, store_gate
from app.services.server_runs import enqueue_quietly
from app.services.test_cases import content_from_row
from app.services.worker_state import WorkerState

log = logging.getLogger("agentlasso.lanes")

ACTIVE_STATUSES = ("queued", "running")


class RunPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What a lane needs to know about its run, read once per lane."""

    run_id: UUID
    total: int
    case_count: int
    chunk_size: int
    agent_id: UUID
    agent_limit: int | None
    target: AgentTarget
    context: dict[str, Any]


class Item(msgspec.Struct, frozen=True):
    """One agent call to make: a pinned case and a trial."""

    trial: int
    case: Any  # the pinned case row


async def run_lane(state: WorkerState, run_id: UUID, chunk_no: int, job_id: str) -> int:
    """Work through the run's chunks from this one until none is left; returns chunks done."""
    claimed = await chunk_rows.claim(state.pool, run_id, chunk_no, job_id, state.worker_id)
    if claimed is None:
        return 0  # a stale duplicate job, or the chunk is already done
    if claimed.kind == "judge":
        await judge_chunk(state, run_id, chunk_no, job_id, claimed.seqs)
        return 1
    await run_rows.mark_running(state.pool, run_id)
    plan = await _plan(state, run_id)
    if plan is None:
        await _drop(state, run_id, chunk_no, job_id)
        return 0
    current: tuple[int, str] | None = (chunk_no, job_id)
    done = 0
    while current is not None:
        current = await _chunk(state, plan, *current)
        done += 1
    return done


async def _chunk(
    state: WorkerState, plan: RunPlan, chunk_no: int, job_id: str
) -> tuple[int, str] | None:
    """One chunk, start to stored; hands it back if the worker is stopping."""
    state.held.add((plan.run_id, chunk_no))
    try:
        rows = await _results_for(state, plan, chunk_no)
        return await _store(state, plan.run_id, chunk_no, job_id, rows)
    except asyncio.CancelledError:
        # SIGTERM: arq re-queues this job; give the chunk back so that job can claim it again.
        await asyncio.shield(chunk_rows.hand_back(state.pool, plan.run_id, chunk_no, job_id))
        raise
    finally:
        state.held.discard((plan.run_id, chunk_no))


async def _drop(state: WorkerState, run_id: UUID, chunk_no: int, job_id: str) -> None:
    """A chunk of a run that cannot go on (cancelled, failed, gone): mark it done, take no more."""
    async with state.pool.acquire() as connection, connection.transaction():
        await chunk_rows.finish(connection, run_id, chunk_no, job_id)


async def _plan(state: WorkerState, run_id: UUID) -> RunPlan | None:
    """The run's agent and context, or None when the run is no longer going on."""
    run = await run_rows.run_by_id(state.pool, run_id)
    if run is None or run["status"] not in ACTIVE_STATUSES:
        return None
    agent = await agent_rows.get_agent(state.pool, run["project_id"], run["agent_id"])
    if agent is None:
        await _fail(state, run_id, "The agent was deleted while the run was going on.")
        return None
    dataset = await dataset_rows.get_dataset(state.pool, run["project_id"], run["dataset_id"])
    return RunPlan(
        run_id=run_id,
        total=run["total"],
        case_count=run["case_count"],
        chunk_size=run["chunk_size"],
        agent_id=agent["id"],
        agent_limit=agent["max_concurrency"],
        target=agent_target(state.secret_key, agent),
        context=(dataset["data_context"] if dataset else None) or {},
    )


async def _items(state: WorkerState, plan: RunPlan, chunk_no: int) -> list[Item]:
    """The chunk's (case, trial) items that have no result yet (all of them, but after a crash)."""
    first = chunk_no * plan.chunk_size
    indexes = range(first, min(first + plan.chunk_size, plan.total))
    # Items are trial-major: every case once, then every case again for trial 2, ...
    positions = sorted({index % plan.case_count + 1 for index in indexes})
    cases = {row["position"]: row for row in
             await run_rows.pinned_at_positions(state.pool, plan.run_id, positions)}  # fmt: skip
    done = await result_rows.existing(
        state.pool, plan.run_id, [row["test_case_id"] for row in cases.values()]
    )
    items = [
        Item(index // plan.case_count + 1, cases[index % plan.case_count + 1]) for index in indexes
    ]
    return [item for item in items if (item.case["test_case_id"], item.trial) not in done]


async def _results_for(state: WorkerState, plan: RunPlan, chunk_no: int) -> list[tuple[Any, ...]]:
    """Call, grade and build the rows of the chunk's items; a cancelled run stops early."""
    items = await _items(state, plan, chunk_no)
    tasks = [asyncio.create_task(_one(state, plan, item)) for item in items]
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
            raise RuntimeError(f"an item of chunk {chunk_no} failed") from task.exception()
    return [task.result() for task in finished]


async def _one(state: WorkerState, plan: RunPlan, item: Item) -> tuple[Any, ...]:
    """Call the agent for one item and grade what it did."""
    case = item.case
    body = {
        "input": case["input"],
        "source": "agentlasso-test",
        "test_case_id": str(case["test_case_id"]),
        "run_id": str(plan.run_id),
        "trial": item.trial,
        "context": plan.context,
    }
    # The agent's slot first: waiting on it must not hold one of this worker's call slots.
    async with state.limiter.slot(plan.agent_id, plan.agent_limit, state.lease_s), state.calls:
        call = await state.agent_client.call(plan.target, body)
    return _graded_row(plan.run_id, item, call, judge_configured=state.judge is not None)


def _graded_row(
    run_id: UUID, item: Item, call: AgentCallResult, *, judge_configured: bool
) -> tuple[Any, ...]:
    """The graded row; AI judge checks wait for a judge chunk when a judge is configured."""
    content = content_from_row(item.case)
    observation = observation_from_wire(
        call.actual_output, call.actual_tool_calls, agent_error=call.error
    )
    verdicts, pending = immediate_verdicts(content, observation, judge_configured)
    result = grade_case(content, observation, verdicts)
    return result_row(
        run_id, item.case["test_case_id"], item.trial, item.case["revision_id"], result,
        actual_output=call.actual_output, actual_tool_calls=call.actual_tool_calls,
        agent_error=call.error, agent_latency_ms=call.latency_ms, agent_attempts=call.attempts,
        judge_pending=pending,
    )  # fmt: skip


async def _store(
    state: WorkerState, run_id: UUID, chunk_no: int, job_id: str, rows: Sequence[tuple[Any, ...]]
) -> tuple[int, str] | None:
    """Store the chunk's results, move the counters, and take the next chunk; one transaction."""
    async with state.pool.acquire() as connection, connection.transaction():
        # The run row lock orders chunk completions of one run: counters move by exact deltas.
        run = await run_rows.lock_run_by_id(connection, run_id)
        assert run is not None
        inserted = await result_rows.insert_new(connection, rows)
        run = await run_rows.apply_counts(connection, run_id, counter_delta(inserted, []))
        judging = [row["seq"] for row in inserted if row["judge_pending"]]
        judge_work = (
            [await chunk_rows.create_judge_chunk(connection, run_id, judging)] if judging else []
        )
        await chunk_rows.finish(connection, run_id, chunk_no, job_id)
        following = await _next_chunk(state, connection, run)
        was_final = run["status"] in FINAL_STATUSES
        run = await store_gate(connection, run)
        await _notify(state, connection, run, became_final=not was_final)
    await enqueue_quietly(state.redis, state.settings.queue_name, judge_work)
    return following


async def _next_chunk(
    state: WorkerState, connection: Connection, run: asyncpg.Record
) -> tuple[int, str] | None:
    if run["status"] not in ACTIVE_STATUSES:
        return None
    queued = await chunk_rows.queue_next(connection, run["id"], 1)
    if not queued:
        return None
    chunk_no, job_id = queued[0]["chunk_no"], queued[0]["job_id"]
    claimed = await chunk_rows.claim(connection, run["id"], chunk_no, job_id, state.worker_id)
    return (chunk_no, job_id) if claimed else None


async def _notify(
    state: WorkerState, connection: Connection, run: asyncpg.Record, became_final: bool
) -> None:
    """Wake the run's waiters: always when it ends, at most a few times a second for progress."""
    if run["status"] in FINAL_STATUSES:
        if became_final:
            await run_rows.notify(connection, run["id"], "final")
        return
    if state.progress_due(run["id"], time.monotonic()):
        await run_rows.notify(connection, run["id"], "progress")


async def _fail(state: WorkerState, run_id: UUID, reason: str) -> None:
    async with state.pool.acquire() as connection, connection.transaction():
        run = await run_rows.lock_run_by_id(connection, run_id)
        if run is None or run["status"] in FINAL_STATUSES:
            return
        await run_rows.set_verdict(connection, run_id, "failed", run["pass_rate"], False, reason)
        await run_rows.notify(connection, run_id, "final")
    log.warning("run %s failed: %s", run_id, reason)
