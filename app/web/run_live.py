"""A run's summary, and the same summary streamed to the run's page while the run moves.

The stream rides on the run watcher's one LISTEN connection per process: a browser watching a
run costs no query while it watches, and its events carry the run row the watcher read once
for everyone. Each state of a run is rendered once, however many browsers watch it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
from litestar import Request, get
from litestar.params import FromPath
from litestar.response import ServerSentEvent, ServerSentEventMessage

from agentlasso.domain.runs import Run
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.services.run_events import run_events
from agentlasso.web.rendering import render
from agentlasso.web.sessions import session_of

# How soon a browser's EventSource reconnects when a stream ends before its run does.
RECONNECT_MS = 2_000
# Rendered summaries kept for the runs being watched: a handful per live run is plenty.
_RENDERED_KEPT = 512
_rendered: dict[bytes, str] = {}


def summary_context(run: Run) -> dict[str, Any]:
    """What the summary shows beyond the run itself: how fast it goes and how long it took."""
    return {"run": run, "throughput": _throughput(run), "took": _took(run)}


def summary_html(run: Run) -> str:
    """The summary as HTML, rendered once for each state of the run."""
    key = msgspec.json.encode(run)
    html = _rendered.get(key)
    if html is None:
        if len(_rendered) >= _RENDERED_KEPT:
            _rendered.clear()
        html = _rendered[key] = render("_run_summary.html", **summary_context(run))
    return html


@get("/runs/{run_id:str}/live", name="run_live")
async def run_live(
    request: Request[Any, Any, Any], platform: PlatformDep, run_id: FromPath[str]
) -> ServerSentEvent:
    """The run's summary as Server-Sent Events: `progress` as it moves, `final` when it ends."""
    stream = run_events(platform, session_of(request).project_id, parse_id(run_id, "run"))
    first = await anext(stream)  # a 404 for a run that is not the project's, before streaming
    return ServerSentEvent(_messages(first, stream))


async def _messages(
    first: tuple[str, Run | None], rest: AsyncIterator[tuple[str, Run | None]]
) -> AsyncIterator[ServerSentEventMessage]:
    yield _message(*first)
    async for kind, run in rest:
        yield _message(kind, run)


def _message(kind: str, run: Run | None) -> ServerSentEventMessage:
    if run is None:
        return ServerSentEventMessage(comment="keepalive")
    event = "final" if kind == "final" else "progress"
    return ServerSentEventMessage(event=event, data=summary_html(run), retry=RECONNECT_MS)


def _throughput(run: Run) -> str | None:
    """Cases a second since the agent calls started, as of the run's last change."""
    if run.started_at is None or run.done == 0:
        return None
    seconds = (run.updated_at - run.started_at).total_seconds()
    return f"{run.done / seconds:,.1f} cases/s" if seconds > 0 else None


def _took(run: Run) -> str | None:
    if run.finished_at is None:
        return None
    seconds = (run.finished_at - run.created_at).total_seconds()
    return f"{seconds:,.1f} s" if seconds < 120 else f"{seconds / 60:,.1f} min"
