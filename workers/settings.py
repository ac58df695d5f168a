"""arq's WorkerSettings: the lane job, and the long-lived clients and duties of a worker."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any
from uuid import UUID

from agentlasso import queue
from agentlasso.agents import AgentClient
from agentlasso.config import load_settings
from agentlasso.db import workers as worker_rows
from agentlasso.db.pool import create_pool
from agentlasso.domain.runs import is_judge_job
from agentlasso.judge.setup import build_judge, require_priced_model
from agentlasso.observability import metrics
from agentlasso.observability.logs import bind_log_context
from agentlasso.observability.loop_lag import watch_loop_lag
from agentlasso.observability.worker_port import serve_worker_port
from agentlasso.off_loop import leave_startup_out_of_collections
from agentlasso.secrets_box import require_secret_key
from agentlasso.services.operations import refresh_queue_gauges
from agentlasso.traces.trace_limits import trace_limits
from agentlasso_workers.alert_watch import deliver_due_webhooks, evaluate_due_alerts
from agentlasso_workers.lane_balance import LoadBoard
from agentlasso_workers.lanes import run_lane as run_lane_service
from agentlasso_workers.rule_grading import grade_due_traces
from agentlasso_workers.simulated_users import SPEND_EVERY_S, SimulatedUsers
from agentlasso_workers.state import WorkerState
from agentlasso_workers.trace_reading import delete_expired_traces, read_waiting_traces
from agentlasso_workers.upkeep import (
    CANCEL_CHECK_S,
    balance_lanes,
    every,
    liveness,
    reap,
    send_heartbeat,
    share_spend,
    watch_cancellations,
)

DEFAULT_CONCURRENCY = 100
# Accepted trace requests are looked for this often; expired traces, less often.
TRACE_READ_S = 0.25
TRACE_EXPIRY_S = 60.0
# Trace rules look for traces that went quiet this often.
RULE_GRADING_S = 1.0
# Alerts due for evaluation, and webhooks due for delivery, are looked for this often.
ALERT_CHECK_S = 0.5
# A queued chunk whose job Redis lost is re-issued after this long.
LOST_AFTER_S = 10.0
# Workers exchange their loads this often: a worker added mid-run gets lanes within a second or
# two of starting.
BALANCE_S = 0.5
WORKER_ACQUIRE_TIMEOUT_S = 60.0
# At shutdown, chunks still being stored get this long (a store takes milliseconds; the pod's
# grace period is 60 s).
STORE_ON_SHUTDOWN_S = 30.0
# Then connections still in use get this long before they are closed under their queries.
POOL_CLOSE_S = 10.0


async def startup(ctx: dict[str, Any]) -> None:
    """Open the clients the lanes share and start the worker's background duties."""
    settings = load_settings()
    leave_startup_out_of_collections()  # short collections: heartbeats keep their time
    concurrency = int(ctx.get("concurrency") or DEFAULT_CONCURRENCY)
    # A lane waits longer than a request would: a worker has nobody to answer 503 to.
    pool = await create_pool(
        settings.database_url,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        acquire_timeout_s=WORKER_ACQUIRE_TIMEOUT_S,
    )
    agent_client = AgentClient.from_settings(settings, max_connections=concurrency)
    state = WorkerState(
        settings=settings, pool=pool, redis=ctx["redis"], agent_client=agent_client,
        secret_key=require_secret_key(settings), concurrency=concurrency,
    )  # fmt: skip
    require_priced_model(settings)
    state.judge = build_judge(settings, state.pool, state.limiter, state.redis)
    state.simulated_users = SimulatedUsers(settings, state.judge_clients, state.judge)
    ctx["state"] = state
    # Every job started from here on logs which worker ran it.
    bind_log_context(worker_id=state.worker_id)
    await send_heartbeat(state)  # listed as live at once, not a heartbeat later
    _observe(state)
    metrics_port = ctx.get("metrics_port") or settings.metrics_port
    stale_s = settings.chunk_stale_s
    if metrics_port:
        ctx["metrics_server"] = await serve_worker_port(
            settings.metrics_host,
            metrics_port,
            lambda: liveness(state, stale_s),
            lambda: refresh_queue_gauges(state.redis, settings.queue_name),
        )
    board = ctx["load_board"] = LoadBoard(state.redis, settings.queue_name)
    ctx["job_room"] = state.lanes_room
    ctx["job_needs_room"] = lambda job_id: not is_judge_job(job_id)
    ctx["duties"] = _duties(state, board)


def _duties(state: WorkerState, board: LoadBoard) -> list[asyncio.Task[None]]:
    """The worker's background duties, each on its own schedule."""
    settings, stale_s = state.settings, state.settings.chunk_stale_s
    return [
        asyncio.create_task(watch_loop_lag()),
        asyncio.create_task(every(BALANCE_S, lambda: balance_lanes(state, board))),
        asyncio.create_task(every(stale_s / 4, lambda: send_heartbeat(state))),
        asyncio.create_task(every(SPEND_EVERY_S, lambda: share_spend(state))),
        asyncio.create_task(every(CANCEL_CHECK_S, lambda: watch_cancellations(state))),
        asyncio.create_task(every(stale_s / 4, lambda: reap(state, stale_s, LOST_AFTER_S))),
        asyncio.create_task(
            every(TRACE_READ_S, lambda: read_waiting_traces(state.pool, trace_limits(settings)))
        ),
        asyncio.create_task(every(TRACE_EXPIRY_S, lambda: delete_expired_traces(state.pool))),
        asyncio.create_task(every(RULE_GRADING_S, lambda: grade_due_traces(state))),
        asyncio.create_task(every(ALERT_CHECK_S, lambda: evaluate_due_alerts(state))),
        asyncio.create_task(every(ALERT_CHECK_S, lambda: deliver_due_webhooks(state))),
    ]


async def shutdown(ctx: dict[str, Any]) -> None:
    """Stop the duties and close what startup opened."""
    if "state" in ctx and (storing := _state(ctx).storing):
        # Chunks whose answers are in hand, stored while heartbeats still keep them held.
        await asyncio.wait(storing, timeout=STORE_ON_SHUTDOWN_S)
    for duty in ctx.get("duties", []):
        duty.cancel()
    if "metrics_server" in ctx:
        ctx["metrics_server"].close()
    if "state" in ctx:
        state = _state(ctx)
        with contextlib.suppress(Exception):  # the row goes stale and is swept anyway
            await worker_rows.forget(state.pool, state.worker_id)
        with contextlib.suppress(Exception):  # likewise the load, after a few seconds
            await ctx["load_board"].leave(state.worker_id)
        await state.agent_client.aclose()
        await state.judge_clients.aclose()
        if state.simulated_users is not None:
            await state.simulated_users.aclose()
        try:
            await asyncio.wait_for(state.pool.close(), POOL_CLOSE_S)
        except TimeoutError:  # a query stuck past the grace period: the pod is going anyway
            state.pool.terminate()


async def run_lane(ctx: dict[str, Any], run_id: str, chunk_no: int, job_id: str) -> int:
    """The one job: work through a run's chunks from this one on."""
    return await run_lane_service(_state(ctx), UUID(run_id), chunk_no, job_id)


def _observe(state: WorkerState) -> None:
    """The worker's own gauges, read from its state at each scrape."""
    metrics.WORKER_CHUNKS_HELD.set_function(lambda: len(state.held))
    metrics.WORKER_CALLS_IN_FLIGHT.set_function(lambda: state.calls.in_use)
    metrics.WORKER_HEARTBEAT_AGE.set_function(lambda: time.monotonic() - state.last_beat_at)


def _state(ctx: dict[str, Any]) -> WorkerState:
    """The worker's state, as startup put it into arq's (untyped) context."""
    state = ctx["state"]
    assert isinstance(state, WorkerState)
    return state


class WorkerSettings:
    """One worker process; `agentlasso worker --concurrency N` sets its agent calls in flight."""

    functions = (run_lane,)
    on_startup = startup
    on_shutdown = shutdown
    redis_settings = queue.redis_settings(load_settings().redis_url)
    queue_name = load_settings().queue_name
    job_serializer = queue.serialize
    job_deserializer = queue.deserialize
    handle_signals = True
    # Lanes are cheap coroutines, most of them waiting; agent calls are bounded by the worker's
    # own slots. Room for several projects' worth of lanes (at most 1,000 each by the quotas).
    max_jobs = 5000
    queue_read_limit = 5000
    # Pick up new lanes quickly: a small run must not wait behind a poll interval.
    poll_delay = 0.1
    # PostgreSQL heartbeats find dead lanes; arq's own timeout only guards a hung job.
    job_timeout = 7 * 24 * 3600
    max_tries = 1000
    keep_result = 60
    # A lane's result is not needed; arq logs every job otherwise, which costs CPU.
    log_results = False
