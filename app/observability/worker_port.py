"""A worker's small HTTP port: GET /metrics for Prometheus, GET /live for a liveness probe.

A worker has no web framework, and needs none for two fixed answers: this reads one request
line per connection and closes it. A probe that finds the event loop stuck gets no answer at
all, which is exactly what should fail it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import msgspec

from agentlasso.observability import metrics

# A request line and headers beyond this are not a probe's or a scraper's.
_MAX_REQUEST_BYTES = 8192
_READ_TIMEOUT_S = 5.0


class Liveness(msgspec.Struct, frozen=True):
    """What /live answers: whether the worker still beats, and how long since it last did."""

    status: str
    heartbeat_age_s: float


async def serve_worker_port(
    host: str,
    port: int,
    liveness: Callable[[], Liveness],
    refresh: Callable[[], Awaitable[None]],
) -> asyncio.Server:
    """Start serving; `refresh` updates gauges that are read on demand, before each scrape."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_READ_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
            status, content_type, body = await _respond(head, liveness, refresh)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            status, content_type, body = 400, "text/plain", b"bad request\n"
        except ConnectionError:
            return
        writer.write(_response(status, content_type, body))
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, host, port, limit=_MAX_REQUEST_BYTES)


async def _respond(
    head: bytes, liveness: Callable[[], Liveness], refresh: Callable[[], Awaitable[None]]
) -> tuple[int, str, bytes]:
    """The status, content type and body for a request's head."""
    method, _, rest = head.partition(b" ")
    path = rest.partition(b" ")[0].partition(b"?")[0]
    if method != b"GET":
        return 405, "text/plain", b"only GET\n"
    if path == b"/metrics":
        with contextlib.suppress(Exception):  # a gauge that cannot refresh keeps its last value
            await refresh()
        return 200, metrics.CONTENT_TYPE, metrics.exposition()
    if path == b"/live":
        alive = liveness()
        return (
            (200 if alive.status == "ok" else 503),
            "application/json",
            msgspec.json.encode(alive),
        )
    return 404, "text/plain", b"not found: GET /metrics or /live\n"


def _response(status: int, content_type: str, body: bytes) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
    head = (
        f"HTTP/1.1 {status} {reason.get(status, 'Service Unavailable')}\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body
