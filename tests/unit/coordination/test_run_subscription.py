"""A waiter's subscription to a run keeps only the latest event: memory does not grow with a
waiter that stops reading, and the event that ends a wait is never overwritten by progress."""

from __future__ import annotations

import asyncio

from agentlasso.coordination.run_watch import RunEvent, Subscription


async def test_a_waiter_that_reads_late_gets_the_latest_event_only() -> None:
    subscription = Subscription()
    for _ in range(10_000):
        subscription.put(RunEvent("progress"))
    subscription.put(RunEvent("resync"))
    assert (await subscription.get()).kind == "resync"
    assert not subscription._ready.is_set()  # nothing else was kept


async def test_progress_never_replaces_the_final_event() -> None:
    subscription = Subscription()
    subscription.put(RunEvent("final"))
    subscription.put(RunEvent("progress"))
    assert (await subscription.get()).kind == "final"


async def test_shutdown_replaces_anything_unread() -> None:
    subscription = Subscription()
    subscription.put(RunEvent("final"))
    subscription.put(RunEvent("shutdown"))
    assert (await subscription.get()).kind == "shutdown"


async def test_get_waits_for_the_next_event() -> None:
    subscription = Subscription()
    waiting = asyncio.create_task(subscription.get())
    await asyncio.sleep(0)
    assert not waiting.done()
    subscription.put(RunEvent("progress"))
    assert (await waiting).kind == "progress"
