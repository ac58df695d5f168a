"""Grading off the event loop: a few threads of its own, and a time budget per request.

RE2 releases the GIL while it searches, and the Python part of grading gives it up every few
milliseconds, so the event loop keeps answering (and a worker keeps sending heartbeats) while a
large batch or a hostile pattern is graded. The budget starts when the work does, not when it
is queued, so a request that waited behind another still gets all of its time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
# Few: grading is CPU work, and a hostile request holds a thread only until its budget is spent.
GRADING_THREADS = 2
_threads = ThreadPoolExecutor(max_workers=GRADING_THREADS, thread_name_prefix="grading")


class TimeBudget:
    """Whether the time given to one request's grading is spent, by the monotonic clock."""

    __slots__ = ("_deadline",)

    def __init__(self, seconds: float) -> None:
        self._deadline = time.monotonic() + seconds

    def __call__(self) -> bool:
        return time.monotonic() > self._deadline


def batch_budget_s(per_thousand_s: float, cases: int) -> float:
    """A batch's grading budget: the per-request budget for every thousand cases it holds (a
    large honest batch is graded whole; a hostile one is still bounded by its size)."""
    return per_thousand_s * max(1, -(-cases // 1000))


async def grade_off_loop(work: Callable[[Callable[[], bool]], T], budget_s: float) -> T:
    """Run `work(out_of_time)` on a grading thread, its budget starting when it starts."""
    return await asyncio.get_running_loop().run_in_executor(
        _threads, lambda: work(TimeBudget(budget_s))
    )
