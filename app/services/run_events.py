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
# A stream ends after this long, run over or not: a client that stopped reading does not hold
# its connection forever, and EventSource reconnects by itself (the `retry` field says when).
MAX_STREAM_S = 300.0


async def run_events(
    platform: Platform, project_id: UUID, run_id: UUID
) -> AsyncIterator[tuple[str, Run | None]]:
    """("progress", run) as it moves, ("keepalive", None) when quiet, then ("final", run); or
    ("reconnect", run) when the stream has lasted MAX_STREAM_S."""
    run = await get_run(platform, project_id, run_id)
    async with platform.watcher.subscribe(run_id, project_id) as events:
        run = await get_run(platform, project_id, run_id)
        clock = asyncio.get_running_loop()
        sent_at = clock.time()
        ends_at = sent_at + MAX_STREAM_S
        yield ("final" if run.is_final else "progress"), run
        while not run.is_final:
            if clock.time() >= ends_at:
                yield "reconnect", run
                return
            try:
                event = await asyncio.wait_for(
                    events.get(), min(KEEPALIVE_S, ends_at - clock.time())
                )
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
