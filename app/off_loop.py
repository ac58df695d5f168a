"""Work over many items without holding the event loop.

A CI batch may carry 10,000 results; a pass over them in plain Python takes tens of
milliseconds, and on the event loop those are milliseconds in which no request is answered.
Python code on another thread gives the GIL back every few milliseconds, so the same pass run
there leaves the loop free; and a stream of many items consumed on the loop lets other tasks
run between slices.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
# Below this many items a pass is quicker than the hop to a thread and back.
MANY = 1_000
SLICE = 1_000


def leave_startup_out_of_collections() -> None:
    """Keep garbage collections short: each pauses every thread, for as long as it takes to
    walk what it tracks. What a process holds once started (modules, functions, the app: some
    90,000 objects) lives as long as the process, so it is left out of them: a full
    collection then takes about a millisecond instead of about forty. Call it once started."""
    gc.freeze()


async def off_loop_when_many(count: int, work: Callable[[], T]) -> T:
    """`work()`, on a thread when it goes over `count` items and that is many."""
    if count < MANY:
        return work()
    return await asyncio.to_thread(work)


async def in_slices(items: Iterable[T], size: int = SLICE) -> AsyncIterator[T]:
    """The items, letting other tasks run after every `size` of them."""
    for index, item in enumerate(items, start=1):
        yield item
        if index % size == 0:
            await asyncio.sleep(0)
