"""Keep-alive connections to agents, shared by every call in a worker process.

A request takes its origin's most recently used idle connection (the least likely to have been
dropped by the server), so a call costs the same however many connections are open. A
connection notices the server hanging up as it happens (it is an asyncio protocol), so a
closed one is never handed out.
"""

from __future__ import annotations

import asyncio
import time

from agentlasso.agents.http1 import AgentConnection, Answer, Origin
from agentlasso.agents.transport import GuardedConnector

# Below the 5 s after which common servers (uvicorn, nginx's default is 75 s) drop idle ones.
DEFAULT_KEEPALIVE_EXPIRY_S = 4.0
# New connections being opened to one origin at once. A chunk's calls start together: opened
# all at once, hundreds of connects overflow a small listen backlog (Python's http.server
# keeps 5), and the dropped ones wait out TCP's retransmissions, 1 s, 3 s, 7 s... (measured:
# 200 calls to such a server took up to 30 s; in waves, 0.4 s).
CONNECTS_AT_ONCE = 8
_SWEEP_EVERY_S = 5.0


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
        self._idle: dict[Origin, list[AgentConnection]] = {}
        self._idle_count = 0
        self._connecting: dict[Origin, asyncio.Semaphore] = {}
        self._next_sweep_at = time.monotonic() + _SWEEP_EVERY_S
        self._closed = False

    async def exchange(self, origin: Origin, request: bytes) -> Answer:
        """Send a whole request on a pooled (or new) connection and read the whole answer."""
        await self._slots.acquire()
        self._busy += 1
        try:
            connection = self._take_idle(origin) or await self._open(origin)
            answer = await connection.exchange(request)  # closes itself if it fails
            self._give_back(origin, connection)
            return answer
        finally:
            self._busy -= 1
            self._slots.release()

    async def aclose(self) -> None:
        """Close every idle connection now; busy ones are closed as their exchange ends."""
        self._closed = True
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()
        self._idle_count = 0

    def _take_idle(self, origin: Origin) -> AgentConnection | None:
        """The origin's most recent idle connection that is still usable, if any."""
        connections = self._idle.get(origin) or []
        usable = None
        while connections and usable is None:
            connection = connections.pop()
            self._idle_count -= 1
            if connection.reusable(self._keepalive_expiry_s):
                usable = connection
            else:
                connection.close()
        if not connections:
            self._idle.pop(origin, None)
        return usable

    async def _open(self, origin: Origin) -> AgentConnection:
        """A new connection, closing another origin's idle one if the pool is full."""
        if self._busy + self._idle_count > self._max_connections:
            self._pop_oldest_idle().close()
        connecting = self._connecting.setdefault(origin, asyncio.Semaphore(CONNECTS_AT_ONCE))
        async with connecting:
            return await self._connector.connect(origin)

    def _give_back(self, origin: Origin, connection: AgentConnection) -> None:
        """Keep a connection whose exchange ended cleanly for the next request."""
        if connection.closed or self._closed:
            connection.close()
        else:
            self._idle.setdefault(origin, []).append(connection)
            self._idle_count += 1
        if time.monotonic() >= self._next_sweep_at:
            self._sweep_expired()

    def _pop_oldest_idle(self) -> AgentConnection:
        """Some origin's oldest idle connection, out of the pool."""
        origin, connections = next(iter(self._idle.items()))
        connection = connections.pop(0)
        self._idle_count -= 1
        if not connections:
            del self._idle[origin]
        return connection

    def _sweep_expired(self) -> None:
        """Close idle connections past their keep-alive, for origins no longer called."""
        self._next_sweep_at = time.monotonic() + _SWEEP_EVERY_S
        # Origins no longer called: their connect limits go too (one opening now gets a new
        # limit, which only loosens it for a moment).
        self._connecting = {o: s for o, s in self._connecting.items() if o in self._idle}
        for origin, connections in list(self._idle.items()):
            kept = [c for c in connections if c.reusable(self._keepalive_expiry_s)]
            for connection in connections:
                if connection not in kept:
                    connection.close()
            self._idle_count -= len(connections) - len(kept)
            if kept:
                self._idle[origin] = kept
            else:
                del self._idle[origin]
