"""Waiting for runs without polling: one LISTEN connection per API process wakes every waiter.

Workers NOTIFY `agentlasso_runs` with "<run_id> progress|final" when they commit. The watcher
reads the run once per notification and hands that row to every waiter of the run, so 500
clients waiting on one run cost one query, not 500, and no query at all while nothing happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from agentlasso.coordination.waiter_shares import within_fair_share
from agentlasso.db import runs as run_rows
from agentlasso.domain.runs import Run
from agentlasso.errors import Unavailable
from agentlasso.observability import metrics

log = logging.getLogger("agentlasso.watch")

CHANNEL = "agentlasso_runs"
RECONNECT_S = 1.0


class RunEvent(msgspec.Struct, frozen=True):
    """What a waiter is woken with: the run as it now stands, or the process shutting down."""

    kind: str  # "progress", "final", "resync" (after a reconnect) or "shutdown"
    run: Run | None = None  # None on shutdown


class Subscription:
    """The latest event of a run for one waiter: a waiter that reads slowly costs no more
    memory than one that keeps up, since a newer event replaces one not yet read."""

    __slots__ = ("_event", "_ready")

    def __init__(self) -> None:
        self._event: RunEvent | None = None
        self._ready = asyncio.Event()

    def put(self, event: RunEvent) -> None:
        """Replace the unread event, unless it already ends the wait (final, shutdown)."""
        unread = self._event
        if unread is not None and unread.kind in ("final", "shutdown") and event.kind != "shutdown":
            return
        self._event = event
        self._ready.set()

    async def get(self) -> RunEvent:
        """The latest event, once there is one."""
        await self._ready.wait()
        self._ready.clear()
        event, self._event = self._event, None
        assert event is not None
        return event


class RunWatcher:
    """Subscriptions to runs, fed by one LISTEN connection; `max_waiters` of them at most (long-
    polls, event streams, CI batches awaiting verdicts), `max_waiters_per_project` per project."""

    def __init__(
        self,
        database_url: str,
        pool: asyncpg.Pool,
        max_waiters: int,
        max_waiters_per_project: int,
    ) -> None:
        self.database_url = database_url
        self.pool = pool
        self.max_waiters = max_waiters
        self.max_waiters_per_project = max_waiters_per_project
        self._subscribers: dict[UUID, set[Subscription]] = {}
        self._waiting: dict[UUID, int] = {}  # by project
        self._connection: asyncpg.Connection | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._closing = False

    async def start(self) -> None:
        """Connect and listen; a lost connection is re-made in the background."""
        await self._listen()
        self._keeper = asyncio.create_task(self._keep_connected())

    async def stop(self) -> None:
        """Answer every waiter and stop listening (shutdown)."""
        self.shutdown()
        if self._keeper is not None:
            self._keeper.cancel()
        if self._connection is not None and not self._connection.is_closed():
            await self._connection.close()

    def shutdown(self) -> None:
        """Wake every waiter now: the process is stopping. Safe to call more than once."""
        self._closing = True
        for subscriptions in self._subscribers.values():
            for subscription in subscriptions:
                subscription.put(RunEvent("shutdown"))

    @property
    def waiters(self) -> int:
        """Waiters this process holds now."""
        return sum(self._waiting.values())

    @contextlib.asynccontextmanager
    async def subscribe(
        self, run_id: UUID, project_id: UUID, kind: str = "long_poll"
    ) -> AsyncIterator[Subscription]:
        """The run's latest events for as long as the block runs; Unavailable when this process
        (or the project here) already holds as many waiters as it may. `kind` (long_poll or
        sse) labels the waiter in the metrics."""
        self._admit(project_id)
        subscription = Subscription()
        if self._closing:
            subscription.put(RunEvent("shutdown"))
        self._subscribers.setdefault(run_id, set()).add(subscription)
        self._waiting[project_id] = self._waiting.get(project_id, 0) + 1
        waiters = metrics.RUN_WAITERS.labels(kind)
        waiters.inc()
        try:
            yield subscription
        finally:
            waiters.dec()
            self._waiting[project_id] -= 1
            if not self._waiting[project_id]:
                del self._waiting[project_id]
            waiting = self._subscribers.get(run_id)
            if waiting is not None:
                waiting.discard(subscription)
                if not waiting:
                    del self._subscribers[run_id]

    def _admit(self, project_id: UUID) -> None:
        if self.waiters >= self.max_waiters:
            raise Unavailable(
                "This server holds as many waiting requests as it can; wait a little and retry, "
                "or poll without wait_s.",
                retry_after_s=5,
            )
        held = self._waiting.get(project_id, 0)
        if held >= self.max_waiters_per_project or not within_fair_share(
            held, self.waiters, self.max_waiters
        ):
            raise Unavailable(
                f"Your project already has {held} requests waiting on runs in this server "
                "(its share of them); wait a little and retry.",
                retry_after_s=5,
            )

    async def _listen(self) -> None:
        # A dedicated connection, not the pool's: releasing a pooled connection runs UNLISTEN.
        connection = await asyncpg.connect(self.database_url)
        await connection.add_listener(CHANNEL, self._on_notification)
        self._connection = connection

    async def _keep_connected(self) -> None:
        while True:
            await asyncio.sleep(RECONNECT_S)
            if self._connection is not None and not self._connection.is_closed():
                continue
            try:
                await self._listen()
            except (OSError, asyncpg.PostgresError):
                log.warning("could not listen for run events; retrying", exc_info=True)
                continue
            # Notifications sent while we were away are lost: every waiter re-reads its run.
            for run_id in list(self._subscribers):
                await self._deliver(run_id, "resync")

    def _on_notification(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        run_text, _, kind = str(payload).partition(" ")
        try:
            run_id = UUID(run_text)
        except ValueError:
            return
        if run_id in self._subscribers:
            asyncio.get_running_loop().create_task(self._deliver(run_id, kind))

    async def _deliver(self, run_id: UUID, kind: str) -> None:
        """Read the run once and hand it to every waiter of the run."""
        try:
            run = await run_rows.run_by_id(self.pool, run_id)
        except (OSError, asyncpg.PostgresError, Unavailable):
            log.warning("could not read run %s after a notification", run_id, exc_info=True)
            return
        if run is not None and run_rows.settle_due(run):
            # Its results are in but its status and gate not yet decided: the settling that
            # is on its way (app/services/run_settling.py) notifies again, and that is delivered.
            return
        for subscription in self._subscribers.get(run_id, ()):
            subscription.put(RunEvent(kind, run))
