"""The one outbound client for agents under test: timeouts, retries, the body cap.

Requests are written whole to the guarded connection pool (connections.py, wire.py): nothing
here follows a redirect, reads a proxy or netrc from the environment, keeps cookies or decodes
a compressed body, and no CPU goes on any of that.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import msgspec
from prometheus_client import Counter, Histogram

from agentlasso.agents.address_guard import AddressRefused, Resolver, parse_agent_url, resolve_host
from agentlasso.agents.calls import AgentCallResult, AgentTarget
from agentlasso.agents.connections import ConnectionPool
from agentlasso.agents.failures import (
    answered_status,
    connection_failed,
    encoded_answer,
    headers_over_limit,
    over_limit,
    request_refused,
    timed_out,
    with_tries,
)
from agentlasso.agents.http1 import (
    Answer,
    AnswerLimits,
    ConnectFailed,
    ConnectionBroken,
    HeadersTooLarge,
    Origin,
)
from agentlasso.agents.replies import Reply, parse_reply
from agentlasso.agents.transport import GuardedConnector, agent_ssl_context
from agentlasso.config import Settings
from agentlasso.domain.agent_calls import Attempt
from agentlasso.domain.agent_headers import HEADER_NAME, HEADER_VALUE
from agentlasso.observability import metrics
from agentlasso.retry_policy import RETRYABLE_STATUSES, RetryPolicy, Sleep, retry_after_s

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
# An answer's head (and any trailers): nginx reads 4 to 32 KiB of headers, Node 16 KiB.
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
DEFAULT_MAX_HEADERS = 100
_INVALID = "invalid_reply"
# Sent whatever the agent's stored headers say: identity keeps a gzip bomb from being inflated.
_FIXED_HEADERS = [(b"Content-Type", b"application/json"), (b"Accept-Encoding", b"identity")]
_DEFAULT_HEADERS = {"user-agent": b"AgentLasso", "accept": b"application/json"}
# traceparent is the call's own (section 14): a stored header of that name is never sent.
_RESERVED_HEADERS = frozenset(
    {
        "content-type", "accept-encoding", "content-length", "transfer-encoding", "host",
        "connection", "traceparent",
    }
)  # fmt: skip
_ENDPOINT_CACHE_SIZE = 4096


class _Endpoint:
    """An agent URL parsed once: where it goes, its request line and its Host header."""

    __slots__ = ("host_header", "origin", "request_line")

    def __init__(self, origin: Origin, target: bytes, host_header: bytes) -> None:
        self.origin = origin
        self.request_line = b"POST " + target + b" HTTP/1.1\r\n"
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
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
        max_headers: int = DEFAULT_MAX_HEADERS,
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
            limits=AnswerLimits(max_body_bytes, max_header_bytes, max_headers),
        )
        self._pool = ConnectionPool(connector=connector, max_connections=max_connections)
        self._max_body_bytes = max_body_bytes
        self._retry = RetryPolicy(
            max_attempts=max_attempts,
            retry_after_cap_s=retry_after_cap_s,
            backoff_base_s=backoff_base_s,
        )
        self._endpoints: dict[str, _Endpoint | str] = {}
        # Per URL and stored headers, a request's head up to its length (None: not sendable).
        self._heads: dict[tuple[str, tuple[tuple[str, str], ...]], bytes | None] = {}
        self._sleep = sleep

    @classmethod
    def from_settings(cls, settings: Settings, max_connections: int) -> AgentClient:
        """The client the settings describe (the API's and every worker's alike)."""
        return cls(
            max_connections=max_connections,
            allow_private=settings.allow_private_agents,
            max_body_bytes=settings.agent_max_body_bytes,
            max_header_bytes=settings.agent_max_header_bytes,
            max_headers=settings.agent_max_headers,
            max_attempts=settings.agent_max_attempts,
            retry_after_cap_s=settings.agent_retry_after_cap_s,
        )

    async def call(self, target: AgentTarget, body: dict[str, Any]) -> AgentCallResult:
        """POST the body; retry connection errors, timeouts, 429 and 502-504; failures are data."""
        started = time.perf_counter()
        endpoint = self._endpoint(target.url)
        if isinstance(endpoint, str):
            return _refused_before_sending(endpoint, started)
        head = self._head(target, endpoint)
        if head is None:
            return _refused_before_sending(request_refused(), started)
        content = msgspec.json.encode(body)
        trace_id, traceparent = new_traceparent()
        request = b"%s%d\r\ntraceparent: %s\r\n\r\n%s" % (head, len(content), traceparent, content)
        attempts: list[Attempt] = []
        while True:
            outcome, latency_ms = await self._attempt(endpoint.origin, request, target.timeout_s)
            attempts.append(Attempt(len(attempts) + 1, outcome.status, latency_ms, outcome.error))
            if not outcome.retryable or len(attempts) >= self._retry.max_attempts:
                return _result(outcome, tuple(attempts), _elapsed_ms(started), trace_id)
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

    def _head(self, target: AgentTarget, endpoint: _Endpoint) -> bytes | None:
        """The request's head up to its Content-Length value, or None when a stored header
        cannot be sent in HTTP; cached, as most calls repeat a few agents."""
        key = (target.url, tuple(target.headers.items()))
        if key not in self._heads:
            if len(self._heads) >= _ENDPOINT_CACHE_SIZE:
                self._heads.clear()
            self._heads[key] = _request_head(endpoint, target.headers)
        return self._heads[key]

    async def _attempt(
        self, origin: Origin, request: bytes, timeout_s: float
    ) -> tuple[_Outcome, int]:
        """One try within the timeout, which covers connect, send and reading the whole body."""
        started = time.perf_counter()
        try:
            # One deadline for the whole exchange: per-read timeouts never fire for a server
            # that sends a byte every half second.
            async with asyncio.timeout(timeout_s):
                answer = await self._pool.exchange(origin, request)
            outcome = self._read_answer(answer)
        except TimeoutError:
            outcome = _Outcome(None, timed_out(timeout_s), retryable=True, kind="timeout")
        except AddressRefused as exc:
            outcome = _Outcome(None, str(exc), kind="refused")
        except HeadersTooLarge as exc:  # the agent would only send them again: not retried
            outcome = _Outcome(None, headers_over_limit(exc), kind=_INVALID)
        except (ConnectFailed, ConnectionBroken, OSError) as exc:
            outcome = _Outcome(None, connection_failed(exc), retryable=True, kind="connection")
        return outcome, _elapsed_ms(started)

    def _read_answer(self, answer: Answer) -> _Outcome:
        """The reply in a 2xx answer, or what is wrong with the answer."""
        status = answer.status
        if not 200 <= status < 300:
            return _status_failure(status, answer.headers)
        encoding = _header(answer.headers, b"content-encoding").strip().lower()
        if encoding not in (b"", b"identity"):
            return _Outcome(status, encoded_answer(encoding.decode("latin-1")), kind=_INVALID)
        if answer.body is None:
            return _Outcome(status, over_limit(self._max_body_bytes), kind=_INVALID)
        reply = parse_reply(answer.body)
        if isinstance(reply, str):
            return _Outcome(status, reply, kind=_INVALID)
        return _Outcome(status, None, reply=reply)


def _parse_endpoint(url: str) -> _Endpoint | str:
    """Where the URL's requests go and their request line, or why it cannot be an agent's."""
    parsed = parse_agent_url(url)
    if isinstance(parsed, str):
        return parsed
    scheme = parsed.scheme
    port = parsed.port or (443 if scheme == "https" else 80)
    origin = Origin(scheme, parsed.raw_host.decode("ascii"), port)
    return _Endpoint(origin, parsed.raw_path, parsed.netloc)


def _request_head(endpoint: _Endpoint, agent_headers: Mapping[str, str]) -> bytes | None:
    """The request line and headers, ending with `Content-Length: ` for the body's length to
    follow; None when a stored header is not valid in HTTP (it is never sent)."""
    if not all(
        HEADER_NAME.fullmatch(n) and HEADER_VALUE.fullmatch(v) for n, v in agent_headers.items()
    ):
        return None
    headers = _request_headers(endpoint.host_header, agent_headers)
    fields = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    return endpoint.request_line + fields + b"Content-Length: "


def _request_headers(
    host_header: bytes, agent_headers: Mapping[str, str]
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


def new_traceparent() -> tuple[str, bytes]:
    """A fresh W3C trace context for one call: its trace id, and the `traceparent` value (this
    call as the parent span, sampled). Every try of the call carries the same one."""
    random = os.urandom(24).hex()
    return random[:32], b"00-%s-%s-01" % (random[:32].encode(), random[32:].encode())


def _result(
    outcome: _Outcome, attempts: tuple[Attempt, ...], latency_ms: int, trace_id: str
) -> AgentCallResult:
    """The call's result from its last attempt's outcome."""
    if outcome.reply is not None:
        reply = outcome.reply
        return _counted(
            AgentCallResult(
                reply.output, reply.tool_calls, None, attempts, latency_ms,
                end=reply.end, agent_trace_id=trace_id,
            )
        )  # fmt: skip
    error = with_tries(outcome.error or "the agent call failed", len(attempts))
    return _counted(
        AgentCallResult(
            msgspec.UNSET, msgspec.UNSET, error, attempts, latency_ms, outcome.kind,
            agent_trace_id=trace_id,
        )
    )  # fmt: skip


def _refused_before_sending(error: str, started: float) -> AgentCallResult:
    """A call that could not be made at all: one attempt, no status."""
    latency_ms = _elapsed_ms(started)
    attempt = Attempt(1, None, latency_ms, error)
    return _counted(
        AgentCallResult(msgspec.UNSET, msgspec.UNSET, error, (attempt,), latency_ms, "refused")
    )


def _counted(result: AgentCallResult) -> AgentCallResult:
    """The result, after counting it in the process's metrics."""
    calls, duration = _outcome_metrics(result.outcome)
    calls.inc()
    duration.observe(result.latency_ms / 1000)
    return result


@functools.cache
def _outcome_metrics(outcome: str) -> tuple[Counter, Histogram]:
    """An outcome's counter and histogram (looked up once: labels() takes a lock each call)."""
    return metrics.AGENT_CALLS.labels(outcome), metrics.AGENT_CALL_DURATION.labels(outcome)


def _elapsed_ms(started: float) -> int:
    """Whole milliseconds since a perf_counter reading."""
    return int((time.perf_counter() - started) * 1000)
