"""Event-loop lag: how late a short sleep wakes up, the surest sign of a blocked loop."""

from __future__ import annotations

import asyncio
import time

from agentlasso.observability import metrics

TICK_S = 0.25
# The gauge shows the worst lag over this many ticks, so a scrape every 15 s still sees a
# one-off stall of a second.
WINDOW_TICKS = 60


async def watch_loop_lag() -> None:
    """Measure forever; set the gauge to the worst lag over the last window."""
    recent: list[float] = []
    while True:
        began = time.perf_counter()
        await asyncio.sleep(TICK_S)
        recent.append(max(0.0, time.perf_counter() - began - TICK_S))
        del recent[:-WINDOW_TICKS]
        metrics.EVENT_LOOP_LAG.set(max(recent))
