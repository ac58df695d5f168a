"""Requests counted and timed by route template (never the path: ids would be labels)."""

from __future__ import annotations

import time

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from agentlasso.observability import metrics


class CountRequests:
    """ASGI middleware: every answered request, by method, route template and status."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            method = scope.get("method", "")
            route = scope.get("path_template") or "unmatched"
            metrics.HTTP_REQUESTS.labels(method, route, str(status)).inc()
            metrics.HTTP_REQUEST_DURATION.labels(method, route).observe(time.perf_counter() - began)
