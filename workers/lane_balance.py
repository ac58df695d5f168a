"""Spreading runs' lanes over the worker pool by what each worker can serve.

A lane stays in the worker that took it, chunk after chunk, so a worker added mid-run would
otherwise wait for a new run to get any work. Twice a second each worker publishes its load
(the agent calls its lanes want, and how many it can make at once) and reads everyone else's.
A worker holding more than its share while another has free capacity hands lanes over: at its
next chunk boundary a lane queues its next chunk instead of taking it, and a worker with room
takes it (job picking is gated by room: app/queue.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec

from agentlasso.queue import QueueConnection

# A load not refreshed for this long is a worker that stopped: it is left out, then removed.
STALE_AFTER_MS = 3_000


class Load(msgspec.Struct, frozen=True):
    """One worker's load: calls its agent lanes want at once, and calls it can make at once."""

    worker_id: str
    demand: int
    capacity: int


def calls_to_hand_over(mine: Load, loads: Sequence[Load]) -> int:
    """Calls' worth of lanes this worker should hand over now: what it holds beyond its share
    of the pool's demand (shares go by capacity), at most what the others have free."""
    others = [load for load in loads if load.worker_id != mine.worker_id]
    free_elsewhere = sum(max(0, load.capacity - load.demand) for load in others)
    if free_elsewhere == 0 or mine.demand == 0:
        return 0
    total_capacity = mine.capacity + sum(load.capacity for load in others)
    total_demand = mine.demand + sum(load.demand for load in others)
    share = min(mine.capacity, total_demand * mine.capacity / total_capacity)
    return max(0, min(int(mine.demand - share), free_elsewhere))


class LoadBoard:
    """The workers' loads, in one Redis hash per queue."""

    def __init__(self, redis: QueueConnection, queue_name: str) -> None:
        self._redis = redis
        self._key = f"{queue_name}:lane-loads"

    async def exchange(self, mine: Load) -> list[Load]:
        """Publish this worker's load and read every live worker's (this one's included)."""
        now_ms = int(time.time() * 1000)
        pipe = self._redis.pipeline(transaction=False)
        pipe.hset(self._key, mine.worker_id, f"{mine.demand} {mine.capacity} {now_ms}")
        pipe.hgetall(self._key)
        _, entries = await pipe.execute()
        loads, stale = _read(entries, now_ms)
        if stale:
            await self._forget(stale)
        return loads

    async def leave(self, worker_id: str) -> None:
        """A stopping worker takes its load off the board."""
        await self._forget([worker_id])

    async def _forget(self, worker_ids: list[str]) -> None:
        pipe = self._redis.pipeline(transaction=False)
        pipe.hdel(self._key, *worker_ids)
        await pipe.execute()


def _read(entries: dict[bytes, bytes], now_ms: int) -> tuple[list[Load], list[str]]:
    """The fresh loads, and the workers whose loads are stale or unreadable."""
    loads, stale = [], []
    for field, value in entries.items():
        worker_id = field.decode(errors="replace")
        try:
            demand, capacity, at_ms = (int(part) for part in value.split())
        except ValueError:
            stale.append(worker_id)
            continue
        if now_ms - at_ms > STALE_AFTER_MS:
            stale.append(worker_id)
        else:
            loads.append(Load(worker_id, demand, capacity))
    return loads, stale
