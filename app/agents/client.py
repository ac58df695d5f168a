"""The one outbound client for agents under test: timeouts, retries, the body cap.

Requests go straight to the guarded connection pool (connections.py) as httpcore requests,
without httpx's client layer: so nothing here follows a redirect, reads a proxy or netrc from the
environment, keeps cookies or decodes a compressed body, and no CPU goes on any of that.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import httpcore
import msgspec

from app.agents.address_guard import AddressRefused, Resolver, parse_agent_url, resolve_host
from app.agents.calls import AgentCallResult, AgentTarget
from app.agents.connections import ConnectionPool
from app.agents.failures import (
    answered_status,
    connection_failed,
    encoded_answer,
    over_limit,
    request_refused,
    timed_out,
    with_tries,
)
from app.agents.replies import Reply, parse_reply
from app.agents.transport import GuardedConnector, agent_ssl_context
from app.domain.agent_calls import Attempt
from app.observability import metrics
from app.retry_policy import RETRYABLE_STATUSES, RetryPolicy, Sleep, retry_after_s

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
_INVALID = "invalid_reply"
# Sent whatever the agent's stored headers say: identity keeps a gzip bomb from being inflated.
_FIXED_HEADERS = [(b"Content-Type", b"application/json"), (b"Accept-Encoding", b"identity")]
_DEFAULT_HEADERS = {"user-agent": b"AgentLasso", "accept": b"application/json"}
_RESERVED_HEADERS = frozenset(
    {"content-type", "accept-encoding", "content-length", "transfer-encoding", "host", "connection"}
)
_ENDPOINT_CACHE_SIZE = 4096


class _Endpoint:
    """An agent URL parsed once: what httpcore requests, and the Host header that goes with it."""

    __slots__ = ("host_header", "url")

    def __init__(self, url: httpcore.URL, host_header: bytes) -> None:
        self.url = url
        self.host_header = host_header


class _Outcome(msgspec.Struct, frozen=True):
    """How one attempt ended: a reply, or an error and whether trying again could help."""

    status: int | None
    error: str | None
    reply: Reply | None = None
    retryable: bool = False
    retry_after_s: float | None = None
    # What went wrong in a word, for metrics: timeout, connection, http_status, invalid_reply,
    # refused.
    kind: str = "ok"


class AgentClient:
    """One per worker process, shared by every concurrent call: pooled, guarded, never raising."""

    def __init__(
        self,
        *,
        max_connections: int,
        allow_private: bool,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_attempts: int = 3,
        retry_after_cap_s: float = 10.0,
        backoff_base_s: float = 0.5,
        resolver: Resolver | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        connector = GuardedConnector(
            resolver=resolver or resolve_host,
            allow_private=allow_private,
            ssl_context=agent_ssl_context(),
            network_backend=httpcore.AnyIOBackend(),
        )
        self._pool = ConnectionPool(connector=connector, max_connections=max_connections)
        self._max_body_bytes = max_body_bytes
        self._retry = RetryPolicy(
            max_attempts=max_attempts,
            retry_after_cap_s=retry_after_cap_s,
            backoff_base_s=backoff_base_s,
        )
        self._endpoints: dict[str, _Endpoint | str] = {}
        self._sleep = sleep

    async def call(self, target: AgentTarget, body: dict[str, Any]) -> AgentCallResult:
        """POST the body; retry connection errors, timeouts, 429 and 502-504; failures are data."""
        started = time.perf_counter()
        endpoint = self._endpoint(target.url)
        if isinstance(endpoint, str):
            return _refused_before_sending(endpoint, started)
        content = msgspec.json.encode(body)
        try:
            request = httpcore.Request(
                b"POST",
                endpoint.url,
                headers=_request_headers(endpoint.host_header, target.headers, len(content)),
                content=content,
            )
        except UnicodeEncodeError:
            return _refused_before_sending(request_refused(), started)
        attempts: list[Attempt] = []
        while True:
            outcome, latency_ms = await self._attempt(request, target.timeout_s)
            attempts.append(Attempt(len(attempts) + 1, outcome.status, latency_ms, outcome.error))
            if not outcome.retryable or len(attempts) >= self._retry.max_attempts:
                return _result(outcome, tuple(attempts), _elapsed_ms(started))
            await self._sleep(self._retry.delay_s(len(attempts), outcome.retry_after_s))

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self._pool.aclose()

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _endpoint(self, url: str) -> _Endpoint | str:
        """The parsed URL, or why it cannot be called; cached, as most calls repeat a few URLs."""
        endpoint = self._endpoints.get(url)
        if endpoint is None:
            if len(self._endpoints) >= _ENDPOINT_CACHE_SIZE:
                self._endpoints.clear()
            endpoint = self._endpoints[url] = _parse_endpoint(url)
        return endpoint

    async def _attempt(self, request: httpcore.Request, timeout_s: float) -> tuple[_Outcome, int]:
        """One try within the timeout, which covers connect, send and reading the whole body."""
        started = time.perf_counter()
        try:
            # One deadline for the whole exchange: per-read timeouts never fire for a server
            # that sends a byte every half second.
            async with asyncio.timeout(timeout_s):
                outcome = await self._exchange(request)
        except (TimeoutError, httpcore.TimeoutException):
            outcome = _Outcome(None, timed_out(timeout_s), retryable=True, kind="timeout")
        except AddressRefused as exc:
            outcome = _Outcome(None, str(exc), kind="refused")
        except (httpcore.LocalProtocolError, httpcore.UnsupportedProtocol):
            outcome = _Outcome(None, request_refused(), kind="refused")
        except (httpcore.NetworkError, httpcore.RemoteProtocolError) as exc:
            outcome = _Outcome(None, connection_failed(exc), retryable=True, kind="connection")
        return outcome, _elapsed_ms(started)

    async def _exchange(self, request: httpcore.Request) -> _Outcome:
        """Send the request and read the answer as a stream, closing it whatever happens."""
        response = await self._pool.send(request)
        try:
            return await self._read_answer(response)
        finally:
            await response.aclose()

    async def _read_answer(self, response: httpcore.Response) -> _Outcome:
        """The reply in a 2xx answer, or what is wrong with the answer."""
        status = response.status
        if not 200 <= status < 300:
            return _status_failure(status, response.headers)
        encoding = _header(response.headers, b"content-encoding").strip().lower()
        if encoding not in (b"", b"identity"):
            return _Outcome(status, encoded_answer(encoding.decode("latin-1")), kind=_INVALID)
        body = await _read_capped(response, self._max_body_bytes)
        if body is None:
            return _Outcome(status, over_limit(self._max_body_bytes), kind=_INVALID)
        reply = parse_reply(body)
        if isinstance(reply, str):
            return _Outcome(status, reply, kind=_INVALID)
        return _Outcome(status, None, reply=reply)


def _parse_endpoint(url: str) -> _Endpoint | str:
    """What httpcore needs to request the URL, or why the URL cannot be an agent's."""
    parsed = parse_agent_url(url)
    if isinstance(parsed, str):
        return parsed
    core_url = httpcore.URL(
        scheme=parsed.raw_scheme, host=parsed.raw_host, port=parsed.port, target=parsed.raw_path
    )
    return _Endpoint(core_url, parsed.netloc)


def _request_headers(
    host_header: bytes, agent_headers: Mapping[str, str], content_length: int
) -> list[tuple[bytes, bytes]]:
    """Host, the agent's stored headers (minus those the client owns), then the client's own."""
    headers = [(b"Host", host_header)]
    names = set()
    for name, value in agent_headers.items():
        lowered = name.lower()
        if lowered not in _RESERVED_HEADERS:
            headers.append((name.encode(), value.encode()))
            names.add(lowered)
    headers += [
        (name.encode(), value) for name, value in _DEFAULT_HEADERS.items() if name not in names
    ]
    headers += _FIXED_HEADERS
    headers.append((b"Content-Length", str(content_length).encode()))
    return headers


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes:
    """A response header's value by lower-case name, empty when absent."""
    for key, value in headers:
        if key.lower() == name:
            return value
    return b""


def _status_failure(status: int, headers: list[tuple[bytes, bytes]]) -> _Outcome:
    """A non-2xx answer: retryable for 429 and 502-504, with the wait the agent asked for."""
    if status not in RETRYABLE_STATUSES:
        return _Outcome(status, answered_status(status), kind="http_status")
    asked_s = retry_after_s(_header(headers, b"retry-after").decode("latin-1"))
    return _Outcome(
        status, answered_status(status), retryable=True, retry_after_s=asked_s, kind="http_status"
    )


async def _read_capped(response: httpcore.Response, max_bytes: int) -> bytes | None:
    """The raw body, or None as soon as it is known to be over max_bytes (it is never cut)."""
    declared = _header(response.headers, b"content-length")
    if declared.isdigit() and int(declared) > max_bytes:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_stream():
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _result(outcome: _Outcome, attempts: tuple[Attempt, ...], latency_ms: int) -> AgentCallResult:
    """The call's result from its last attempt's outcome."""
    if outcome.reply is not None:
        reply = outcome.reply
        return _counted(AgentCallResult(reply.output, reply.tool_calls, None, attempts, latency_ms))
    error = with_tries(outcome.error or "the agent call failed", len(attempts))
    return _counted(
        AgentCallResult(msgspec.UNSET, msgspec.UNSET, error, attempts, latency_ms, outcome.kind)
    )


def _refused_before_sending(error: str, started: float) -> AgentCallResult:
    """A call that could not be made at all: one attempt, no status."""
    latency_ms = _elapsed_ms(started)
    attempt = Attempt(1, None, latency_ms, error)
    return _counted(
        AgentCallResult(msgspec.UNSET, msgspec.UNSET, error, (attempt,), latency_ms, "refused")
    )


def _counted(result: AgentCallResult) -> AgentCallResult:
    """The result, after counting it in the process's metrics."""
    metrics.AGENT_CALLS.labels(result.outcome).inc()
    metrics.AGENT_CALL_DURATION.labels(result.outcome).observe(result.latency_ms / 1000)
    return result


def _elapsed_ms(started: float) -> int:
    """Whole milliseconds since a perf_counter reading."""
    return int((time.perf_counter() - started) * 1000)
