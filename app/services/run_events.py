"""A run's progress as a stream of events, ending with its final status (for SSE)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from uuid import UUID

from app.domain.runs import Run
from app.services.platform import Platform
from app.services.runs import get_run

KEEPALIVE_S = 15.0
# Progress goes out at most this often to one client, however many workers report.
MIN_PROGRESS_GAP_S = 0.25


async def run_events(
    platform: Platform, project_id: UUID, run_id: UUID
) -> AsyncIterator[tuple[str, Run | None]]:
    """("progress", run) as it moves, ("keepalive", None) when quiet, then ("final", run)."""
    run = await get_run(platform, project_id, run_id)
    async with platform.watcher.subscribe(run_id) as events:
        run = await get_run(platform, project_id, run_id)
        sent_at = asyncio.get_running_loop().time()
        yield ("final" if run.is_final else "progress"), run
        while not run.is_final:
            try:
                event = await asyncio.wait_for(events.get(), KEEPALIVE_S)
            except TimeoutError:
                yield "keepalive", None
                continue
            if event.kind == "shutdown":
                yield "shutdown", run
                return
            run = event.run or run
            now = asyncio.get_running_loop().time()
            if run.is_final:
                yield "final", run
            elif now - sent_at >= MIN_PROGRESS_GAP_S:
                sent_at = now
                yield "progress", run
