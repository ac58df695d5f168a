"""The model SDK's requests sent on the platform's own keep-alive HTTP/1.1 connections.

The SDK (its request building, its errors, its response types) is kept; only the layer under
it changes. httpx2's default transport (httpcore over anyio and h11) cost about 0.9 ms of CPU
a call at a few hundred calls in flight, half of what asking the simulated user cost
(tests/perf/bench_simulated_conversations.py): it polls every pooled connection on each
request and writes a request in several pieces. The agent client's connections
(app/agents/http1.py) write a request in one piece and parse the answer with llhttp.

The model's address is the operator's (ANTHROPIC_BASE_URL), not a tenant's: it is not held to
the agents' address guard. Timeouts are the caller's (ModelCaller bounds each attempt).

These connections go straight to the model. A deployment whose egress goes through a proxy
(HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, less NO_PROXY) keeps the SDK's own transport, which
honours them (`proxied`).
"""

from __future__ import annotations

import urllib.request

import httpx2

from agentlasso.agents.address_guard import resolve_host
from agentlasso.agents.connections import ConnectionPool
from agentlasso.agents.http1 import AnswerLimits, ConnectFailed, ConnectionBroken, Origin
from agentlasso.agents.transport import GuardedConnector, agent_ssl_context

# A model's answer: far more than max_tokens of text or tool input can take.
MAX_ANSWER_BYTES = 32 * 1024 * 1024
MAX_HEAD_BYTES = 256 * 1024
MAX_HEADERS = 200
_DEFAULT_PORTS = {"https": 443, "http": 80}
# Where the SDK sends requests when the settings (ANTHROPIC_BASE_URL) name no other address.
SDK_BASE_URL = "https://api.anthropic.com"


def proxied(base_url: str | None) -> bool:
    """Whether the environment names a proxy (HTTPS_PROXY, NO_PROXY..., the standard variables
    httpx reads, not our settings) for the model's address, as the SDK would find it."""
    url = httpx2.URL(base_url or SDK_BASE_URL)
    proxies = urllib.request.getproxies()
    if not (proxies.get(url.scheme) or proxies.get("all")):
        return False
    host = url.host if url.port is None else f"{url.host}:{url.port}"
    return not urllib.request.proxy_bypass(host)


class PooledTransport(httpx2.AsyncBaseTransport):
    """At most `max_connections` keep-alive connections; a request waits when all are busy."""

    def __init__(self, max_connections: int) -> None:
        connector = GuardedConnector(
            resolver=resolve_host,
            allow_private=True,
            ssl_context=agent_ssl_context(),
            limits=AnswerLimits(MAX_ANSWER_BYTES, MAX_HEAD_BYTES, MAX_HEADERS),
        )
        self._pool = ConnectionPool(connector=connector, max_connections=max_connections)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send the request whole on a pooled connection; the answer read whole."""
        url = request.url
        origin = Origin(url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme, 443))
        try:
            answer = await self._pool.exchange(
                origin, _request_bytes(request, await request.aread())
            )
        except ConnectFailed as exc:
            raise httpx2.ConnectError(
                f"{exc} ({exc.__cause__ or 'no cause'})", request=request
            ) from exc
        except (ConnectionBroken, OSError) as exc:
            raise httpx2.ReadError(str(exc), request=request) from exc
        if answer.body is None:
            raise httpx2.ReadError("the answer was larger than the platform reads", request=request)
        return httpx2.Response(
            answer.status, headers=answer.headers, content=answer.body, request=request
        )

    async def aclose(self) -> None:
        """Close every connection."""
        await self._pool.aclose()


def _request_bytes(request: httpx2.Request, body: bytes) -> bytes:
    """The request line, the headers httpx2 set (Host and Content-Length among them), the body."""
    target = request.url.raw_path.decode("ascii")
    lines = [f"{request.method} {target} HTTP/1.1".encode("ascii")]
    lines += [name + b": " + value for name, value in request.headers.raw]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body
