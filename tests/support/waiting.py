"""Waiting for something another process does, with a deadline instead of a hang."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """What was waited for did not happen in time."""


def wait_until(
    predicate: Callable[[], T],
    timeout_s: float,
    *,
    what: str = "the condition",
    every_s: float = 0.05,
) -> T:
    """Call `predicate` until it returns something truthy, and return that; fail after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise WaitTimeout(f"{what} did not happen within {timeout_s:g} s")
        time.sleep(every_s)


async def eventually(
    predicate: Callable[[], Awaitable[T]],
    timeout_s: float,
    *,
    what: str = "the condition",
    every_s: float = 0.05,
) -> T:
    """Await `predicate` until it gives something truthy, and return that; fail after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise WaitTimeout(f"{what} did not happen within {timeout_s:g} s")
        await asyncio.sleep(every_s)


class RecordedSleep:
    """A sleep for retry loops that returns at once and remembers each delay it was asked for."""

    def __init__(self) -> None:
        self.delays_s: list[float] = []

    async def __call__(self, delay_s: float) -> None:
        self.delays_s.append(delay_s)
        await asyncio.sleep(0)
