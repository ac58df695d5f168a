"""A worker's agent-call slots, shared fairly between projects.

A project may hold at most its share of them, so a project whose agent hangs every call (a
tarpit) cannot take them all: the rest stay for everyone else. And a slot that comes free goes
to the waiting project that holds the fewest, so a small run of one project is not queued
behind a large run of another.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Hashable


class FairSlots:
    """`capacity` slots; no project holds more than `share` of them (1.0: no cap)."""

    def __init__(self, capacity: int, share: float = 1.0) -> None:
        self.capacity = capacity
        self.cap = capacity if share >= 1 else max(1, int(capacity * share))
        self.in_use = 0
        self._held: dict[Hashable, int] = {}
        self._waiting: dict[Hashable, deque[asyncio.Future[None]]] = {}

    def held_by(self, project: Hashable) -> int:
        """Slots this project holds now."""
        return self._held.get(project, 0)

    @contextlib.asynccontextmanager
    async def slot(self, project: Hashable) -> AsyncIterator[None]:
        """Hold one slot for this project while the block runs."""
        await self._acquire(project)
        try:
            yield
        finally:
            self._release(project)

    async def _acquire(self, project: Hashable) -> None:
        if not self._waiting and self._may_take(project):
            self._grant(project)  # the usual case: nobody waits, a slot is free
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(project, deque()).append(granted)
        # Others may wait only because they are at their cap: this project may go at once.
        self._dispatch()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release(project)  # granted just as the waiter was cancelled
            else:
                self._forget(project, granted)
            raise

    def _may_take(self, project: Hashable) -> bool:
        return self.in_use < self.capacity and self.held_by(project) < self.cap

    def _ready(self) -> list[Hashable]:
        """Projects with a waiter that may take a slot now."""
        return [p for p, queue in self._waiting.items() if queue and self.held_by(p) < self.cap]

    def _grant(self, project: Hashable) -> None:
        self.in_use += 1
        self._held[project] = self.held_by(project) + 1

    def _release(self, project: Hashable) -> None:
        self.in_use -= 1
        self._held[project] -= 1
        if not self._held[project]:
            del self._held[project]
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free slots to waiting projects, the one holding the fewest first."""
        while self.in_use < self.capacity:
            ready = [
                p for p, queue in self._waiting.items() if queue and self.held_by(p) < self.cap
            ]
            if not ready:
                return
            project = min(ready, key=self.held_by)
            granted = self._waiting[project].popleft()
            if not self._waiting[project]:
                del self._waiting[project]
            if granted.done():  # cancelled while waiting
                continue
            self._grant(project)
            granted.set_result(None)

    def _forget(self, project: Hashable, granted: asyncio.Future[None]) -> None:
        queue = self._waiting.get(project)
        if queue is not None and granted in queue:
            queue.remove(granted)
            if not queue:
                del self._waiting[project]
        self._dispatch()
