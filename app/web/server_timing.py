"""Server-Timing on every page: the server's time for it, and how much of that was spent
waiting on the agent and the judge, as a browser's developer tools show it (and as the web
benchmark reads it)."""

from __future__ import annotations

import time
from typing import Any, cast

from litestar import Request
from litestar.types import ASGIApp, Message, Receive, Scope, Send

_SPENT = "agentlasso.time_spent"


def spent(request: Request[Any, Any, Any], name: str, seconds: float) -> None:
    """Note time a page spent waiting on something else (an agent, the judge)."""
    _noted(request.scope).append((name, seconds))


def _noted(scope: Scope) -> list[tuple[str, float]]:
    # The ASGI scope is a plain dict; Litestar types it as one of its known shapes.
    noted: list[tuple[str, float]] = cast(dict[str, Any], scope).setdefault(_SPENT, [])
    return noted


def server_timing(app: ASGIApp) -> ASGIApp:
    """Middleware: a Server-Timing header with `total` and what the page noted it spent."""

    async def timed(scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()

        async def send_with_timing(message: Message) -> None:
            if message["type"] == "http.response.start":
                total = time.perf_counter() - started
                timings = [*_noted(scope), ("total", total)]
                value = ", ".join(f"{name};dur={seconds * 1000:.2f}" for name, seconds in timings)
                headers = [*message.get("headers", ()), (b"server-timing", value.encode())]
                message = cast(Message, {**message, "headers": headers})
            await send(message)

        await app(scope, receive, send_with_timing)

    return timed
