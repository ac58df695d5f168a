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

from app.db import runs as run_rows
from app.domain.runs import Run
from app.errors import Unavailable

log = logging.getLogger("agentlasso.watch")

CHANNEL = "agentlasso_runs"
RECONNECT_S = 1.0


class RunEvent(msgspec.Struct, frozen=True):
    """What a waiter is woken with: the run as it now stands, or the process shutting down."""

    kind: str  # "progress", "final", "resync" (after a reconnect) or "shutdown"
    run: Run | None = None  # None on shutdown


class RunWatcher:
    """Subscriptions to runs, fed by one LISTEN connection."""

    def __init__(self, database_url: str, pool: asyncpg.Pool) -> None:
        self.database_url = database_url
        self.pool = pool
        self._subscribers: dict[UUID, set[asyncio.Queue[RunEvent]]] = {}
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
        for queues in self._subscribers.values():
            for events in queues:
                events.put_nowait(RunEvent("shutdown"))

    @contextlib.asynccontextmanager
    async def subscribe(self, run_id: UUID) -> AsyncIterator[asyncio.Queue[RunEvent]]:
        """A queue of the run's events for as long as the block runs."""
        events: asyncio.Queue[RunEvent] = asyncio.Queue()
        if self._closing:
            events.put_nowait(RunEvent("shutdown"))
        self._subscribers.setdefault(run_id, set()).add(events)
        try:
            yield events
        finally:
            waiting = self._subscribers.get(run_id)
            if waiting is not None:
                waiting.discard(events)
                if not waiting:
                    del self._subscribers[run_id]

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
        for events in self._subscribers.get(run_id, ()):
            events.put_nowait(RunEvent(kind, run))
