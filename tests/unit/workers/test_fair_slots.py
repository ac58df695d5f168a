"""A worker's call slots shared between projects: capped per project, freed to the fewest."""

from __future__ import annotations

import asyncio

from agentlasso_workers.fair_slots import FairSlots


async def hold(slots: FairSlots, project: str, release: asyncio.Event, got: list[str]) -> None:
    async with slots.slot(project):
        got.append(project)
        await release.wait()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_project_never_holds_more_than_its_share() -> None:
    slots = FairSlots(capacity=10, share=0.8)
    release, got = asyncio.Event(), []
    tarpit = [asyncio.create_task(hold(slots, "a", release, got)) for _ in range(20)]
    await settle()
    assert slots.held_by("a") == 8 and slots.in_use == 8
    # Another project gets the slots left at once, while the first still waits for more.
    other = [asyncio.create_task(hold(slots, "b", release, got)) for _ in range(2)]
    await settle()
    assert slots.held_by("b") == 2 and slots.in_use == 10
    release.set()
    await asyncio.gather(*tarpit, *other)
    assert got.count("a") == 20 and slots.in_use == 0


async def test_a_freed_slot_goes_to_the_waiting_project_holding_the_fewest() -> None:
    slots = FairSlots(capacity=4)
    first_release, got = asyncio.Event(), []
    big = [asyncio.create_task(hold(slots, "big", first_release, got)) for _ in range(4)]
    await settle()
    later = asyncio.Event()
    more_big = [asyncio.create_task(hold(slots, "big", later, got)) for _ in range(3)]
    small = asyncio.create_task(hold(slots, "small", later, got))
    await settle()
    assert got == ["big"] * 4
    first_release.set()
    await asyncio.gather(*big)
    await settle()
    # The small project was queued last but holds nothing: it gets a slot first.
    assert got[4] == "small"
    later.set()
    await asyncio.gather(*more_big, small)


async def test_a_cancelled_waiter_gives_its_turn_away() -> None:
    slots = FairSlots(capacity=1)
    release, got = asyncio.Event(), []
    holder = asyncio.create_task(hold(slots, "a", release, got))
    await settle()
    cancelled = asyncio.create_task(hold(slots, "b", release, got))
    waiting = asyncio.create_task(hold(slots, "c", release, got))
    await settle()
    cancelled.cancel()
    release.set()
    await asyncio.gather(holder, waiting)
    assert got == ["a", "c"] and slots.in_use == 0
