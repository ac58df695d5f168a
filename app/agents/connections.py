"""Keep-alive HTTP/1.1 connections to agents, shared by every call in a worker process.

httpcore's own pool (what httpx uses) rescans every open connection, polling each idle socket,
twice per request: with 200 connections a call cost 2.3 ms of CPU, mostly there (measured with
tests/perf/bench_agent_client.py). This pool looks only at the origin's most recently used idle
connection, so a request costs the same however many are open (about 0.3 ms per call in all).
It is built on httpcore's public HTTP/1.1 connection class, with no private attribute touched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, cast

import httpcore

from app.agents.transport import GuardedConnector

# Below the 5 s after which common servers (uvicorn, nginx's default is 75 s) drop idle ones.
DEFAULT_KEEPALIVE_EXPIRY_S = 4.0
_SWEEP_EVERY_S = 5.0


# httpcore.Origin compares by value but is not hashable.
_OriginKey = tuple[bytes, bytes, int]


class _Body(Protocol):
    """What httpcore's HTTP/1.1 response stream offers."""

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class _ReturningBody:
    """A response body that gives its connection back to the pool once closed."""

    def __init__(self, body: _Body, give_back: Callable[[], Awaitable[None]]) -> None:
        self._body = body
        self._give_back = give_back
        self._closed = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._body.__aiter__()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._body.aclose()
        finally:
            await self._give_back()


class ConnectionPool:
    """At most max_connections open connections; a request waits when all are busy."""

    def __init__(
        self,
        *,
        connector: GuardedConnector,
        max_connections: int,
        keepalive_expiry_s: float = DEFAULT_KEEPALIVE_EXPIRY_S,
    ) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections}")
        self._connector = connector
        self._max_connections = max_connections
        self._keepalive_expiry_s = keepalive_expiry_s
        self._slots = asyncio.Semaphore(max_connections)
        self._busy = 0
        # Per origin, oldest first: requests take the last (the least likely to be stale).
        self._idle: dict[_OriginKey, list[httpcore.AsyncHTTP11Connection]] = {}
        self._idle_count = 0
        self._next_sweep_at = time.monotonic() + _SWEEP_EVERY_S
        self._closed = False

    async def send(self, request: httpcore.Request) -> httpcore.Response:
        """Send on a pooled connection; closing the response gives the connection back."""
        origin = request.url.origin
        key = (origin.scheme, origin.host, origin.port)
        await self._slots.acquire()
        self._busy += 1
        try:
            connection = await self._take_idle(key) or await self._open(origin)
            response = await connection.handle_async_request(request)
        except BaseException:
            self._release_slot()
            raise
        body = cast(_Body, response.stream)
        response.stream = _ReturningBody(body, lambda: self._give_back(key, connection))
        return response

    async def aclose(self) -> None:
        """Close every idle connection now, and every busy one as its response closes."""
        self._closed = True
        idle = [connection for connections in self._idle.values() for connection in connections]
        self._idle.clear()
        self._idle_count = 0
        for connection in idle:
            await connection.aclose()

    async def _take_idle(self, key: _OriginKey) -> httpcore.AsyncHTTP11Connection | None:
        """The origin's most recent idle connection that is still usable, if any."""
        # No await until the idle list is settled: another call may give a connection back.
        connections = self._idle.get(key) or []
        stale: list[httpcore.AsyncHTTP11Connection] = []
        usable = None
        while connections and usable is None:
            connection = connections.pop()
            self._idle_count -= 1
            # has_expired also notices a server that has hung up (its socket reads as ready).
            if connection.is_available() and not connection.has_expired():
                usable = connection
            else:
                stale.append(connection)
        if not connections:
            self._idle.pop(key, None)
        for connection in stale:
            await connection.aclose()
        return usable

    async def _open(self, origin: httpcore.Origin) -> httpcore.AsyncHTTP11Connection:
        """A new connection, closing another origin's idle one if the pool is full."""
        if self._busy + self._idle_count > self._max_connections:
            await self._pop_oldest_idle().aclose()
        stream = await self._connector.connect(origin)
        return httpcore.AsyncHTTP11Connection(
            origin, stream, keepalive_expiry=self._keepalive_expiry_s
        )

    async def _give_back(self, key: _OriginKey, connection: httpcore.AsyncHTTP11Connection) -> None:
        """Keep a connection whose exchange ended cleanly for the next request; close others."""
        self._release_slot()
        if connection.is_available() and not self._closed:
            self._idle.setdefault(key, []).append(connection)
            self._idle_count += 1
        else:
            await connection.aclose()
        if time.monotonic() >= self._next_sweep_at:
            await self._sweep_expired()

    def _release_slot(self) -> None:
        self._busy -= 1
        self._slots.release()

    def _pop_oldest_idle(self) -> httpcore.AsyncHTTP11Connection:
        """Some origin's oldest idle connection, out of the pool."""
        key, connections = next(iter(self._idle.items()))
        connection = connections.pop(0)
        self._idle_count -= 1
        if not connections:
            del self._idle[key]
        return connection

    async def _sweep_expired(self) -> None:
        """Close idle connections past their keep-alive, for origins no longer called."""
        self._next_sweep_at = time.monotonic() + _SWEEP_EVERY_S
        expired: list[httpcore.AsyncHTTP11Connection] = []
        for key, connections in list(self._idle.items()):
            kept: list[httpcore.AsyncHTTP11Connection] = []
            for connection in connections:
                (expired if connection.has_expired() else kept).append(connection)
            self._idle_count -= len(connections) - len(kept)
            if kept:
                self._idle[key] = kept
            else:
                del self._idle[key]
        for connection in expired:
            await connection.aclose()
