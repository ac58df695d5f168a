"""What one worker process shares between its lanes: clients, limits, and what it holds."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Coroutine
from typing import Any
from uuid import UUID

import asyncpg

from agentlasso.agents import AgentClient
from agentlasso.config import Settings
from agentlasso.coordination.agent_limits import AgentLimiter
from agentlasso.coordination.rate_limits import TokenBucket
from agentlasso.domain.runs import MAX_CHUNK_SIZE
from agentlasso.judge.calls import Judge
from agentlasso.judge.keys import JudgeClients
from agentlasso.queue import QueueConnection
from agentlasso_workers.fair_slots import FairSlots
from agentlasso_workers.simulated_users import SimulatedUsers

log = logging.getLogger("agentlasso.lanes")

# A lane handed to another worker is not counted as room here for this long, so this worker
# does not take its own lane straight back before the other has polled the queue.
HANDED_OVER_S = 1.5
# Progress notifications per run from one worker, at most this often (NOTIFY is not free).
PROGRESS_EVERY_S = 0.25


class WorkerState:
    """One per worker process, created at start-up and closed at shutdown."""

    def __init__(
        self,
        *,
        settings: Settings,
        pool: asyncpg.Pool,
        redis: QueueConnection,
        agent_client: AgentClient,
        secret_key: bytes,
        concurrency: int,
        judge: Judge | None = None,
    ) -> None:
        self.settings = settings
        self.pool = pool
        self.redis = redis
        self.agent_client = agent_client
        # Set at start-up; which key and model judge a run is the project's (agentlasso.judge.keys).
        self.judge = judge
        self.judge_clients = JudgeClients(settings, pool, secret_key)
        self.simulated_users: SimulatedUsers | None = None  # set at start-up, with the judge
        self.secret_key = secret_key
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.concurrency = concurrency
        self.worker_id = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:6]}"
        # When this worker last told PostgreSQL it lives (monotonic): its liveness.
        self.last_beat_at = time.monotonic()
        # Agent calls in flight in this process, across all its lanes and runs, shared fairly
        # between projects.
        self.calls = FairSlots(concurrency, settings.project_share)
        self.limiter = AgentLimiter(redis, settings.queue_name, settings.slot_lease_s)
        # A project's calls a minute to one agent host, across every worker; a chunk takes its
        # calls' turns at once, so the bucket holds at least a chunk's worth.
        per_s = settings.quota_agent_host_calls_per_min / 60
        self.host_pacer = TokenBucket(
            redis, f"{settings.queue_name}:host-calls", per_s, max(per_s, MAX_CHUNK_SIZE)
        )
        self.held: set[tuple[UUID, int]] = set()
        # Chunks being graded and stored while their lanes go on: shutdown waits for them.
        self.storing: set[asyncio.Task[None]] = set()
        # Agent calls this worker's lanes want at once (each lane its run's chunk size): its
        # load, which the pool balances (workers/lane_balance.py).
        self.lane_calls = 0
        # Calls' worth of lanes to hand to other workers, set by the balancing duty; and calls
        # handed over lately, not counted as room until another worker has taken them.
        self.to_hand_over = 0
        self._handed_over: list[tuple[float, int]] = []
        # Runs whose judge key was refused, seen by this worker before the run row says so.
        self.judge_stopped: dict[UUID, str] = {}
        self._cancelled: dict[UUID, asyncio.Event] = {}
        self._last_progress: dict[UUID, float] = {}

    def store_in_background(self, store: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run a chunk's store in a task of its own; a failure is logged at once (its lane
        raises it too, when it next looks)."""
        task = asyncio.create_task(store)
        self.storing.add(task)
        task.add_done_callback(self._stored)
        return task

    def _stored(self, task: asyncio.Task[None]) -> None:
        self.storing.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error(
                "storing a chunk failed; the reaper gives it to another worker", exc_info=error
            )

    def lanes_room(self) -> int:
        """How many more agent lanes this worker can serve now (arq asks before taking jobs)."""
        free = self.concurrency - self.lane_calls - self.calls_in_transit()
        return 0 if free <= 0 else math.ceil(free / MAX_CHUNK_SIZE)

    def calls_in_transit(self) -> int:
        """Calls' worth of lanes handed over lately, perhaps not yet taken by another worker:
        still this worker's load, so that neither it nor the others hand over more for them."""
        now = time.monotonic()
        self._handed_over = [(until, calls) for until, calls in self._handed_over if until > now]
        return sum(calls for _, calls in self._handed_over)

    def hand_over(self, chunk_size: int) -> bool:
        """Whether a lane of this chunk size should go to another worker now (and note it)."""
        if self.to_hand_over < chunk_size:
            return False
        self.to_hand_over -= chunk_size
        self._handed_over.append((time.monotonic() + HANDED_OVER_S, chunk_size))
        return True

    def cancelled(self, run_id: UUID) -> asyncio.Event:
        """Set when the run stops (cancelled or failed) while this worker works on it."""
        return self._cancelled.setdefault(run_id, asyncio.Event())

    def held_runs(self) -> list[UUID]:
        """Runs this worker holds chunks of."""
        return sorted({run_id for run_id, _ in self.held})

    def forget_idle_runs(self) -> None:
        """Drop per-run bookkeeping for runs this worker no longer holds."""
        active = {run_id for run_id, _ in self.held}
        for run_id in list(self._cancelled):
            if run_id not in active:
                del self._cancelled[run_id]
        for run_id in list(self._last_progress):
            if run_id not in active:
                del self._last_progress[run_id]

    def progress_due(self, run_id: UUID, now: float) -> bool:
        """Whether to notify progress for the run now (and remember that it did)."""
        if now - self._last_progress.get(run_id, 0.0) < PROGRESS_EVERY_S:
            return False
        self._last_progress[run_id] = now
        return True
