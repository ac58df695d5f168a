"""A run's progress as a stream of events, ending with its final status (for SSE)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from uuid import UUID

from agentlasso.domain.runs import Run
from agentlasso.services.platform import Platform
from agentlasso.services.runs import get_run

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
    async with platform.watcher.subscribe(run_id, project_id, kind="sse") as events:
        run = await get_run(platform, project_id, run_id)
        clock = asyncio.get_running_loop()
        sent_at = clock.time()
        ends_at = sent_at + MAX_STREAM_S
        # Progress held back by MIN_PROGRESS_GAP_S: sent when the gap is over, so the last
        # state before a quiet spell is never lost.
        held: Run | None = None
        yield ("final" if run.is_final else "progress"), run
        while not run.is_final:
            now = clock.time()
            if now >= ends_at:
                yield "reconnect", run
                return
            quiet_for = min(KEEPALIVE_S, ends_at - now)
            if held is not None:
                quiet_for = min(quiet_for, max(0.0, sent_at + MIN_PROGRESS_GAP_S - now))
            try:
                event = await asyncio.wait_for(events.get(), quiet_for)
            except TimeoutError:
                if held is None:
                    yield "keepalive", None
                else:
                    sent_at, held = clock.time(), None
                    yield "progress", run
                continue
            if event.kind == "shutdown":
                yield "shutdown", run
                return
            run = event.run or run
            if run.is_final:
                yield "final", run
            elif clock.time() - sent_at >= MIN_PROGRESS_GAP_S:
                sent_at, held = clock.time(), None
                yield "progress", run
            else:
                held = run
