"""A run's progress as a stream of events, ending with its final status (for SSE)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from uuid import UUID

import asyncpg

from app.services.run_watch import RunWatcher
from app.services.runs import FINAL_STATUSES, get_run

KEEPALIVE_S = 15.0
# Progress goes out at most this often to one client, however many workers report.
MIN_PROGRESS_GAP_S = 0.25


async def run_events(
    pool: asyncpg.Pool, watcher: RunWatcher, project_id: UUID, run_id: UUID
) -> AsyncIterator[tuple[str, asyncpg.Record | None]]:
    """("progress", run) as it moves, ("keepalive", None) when quiet, then ("final", run)."""
    run = await get_run(pool, project_id, run_id)
    async with watcher.subscribe(run_id) as events:
        run = await get_run(pool, project_id, run_id)
        sent_at = asyncio.get_running_loop().time()
        yield ("final" if run["status"] in FINAL_STATUSES else "progress"), run
        while run["status"] not in FINAL_STATUSES:
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
            if run["status"] in FINAL_STATUSES:
                yield "final", run
            elif now - sent_at >= MIN_PROGRESS_GAP_S:
                sent_at = now
                yield "progress", run
