"""The one outbound client for agents under test: timeouts, retries, the body cap.

Requests are written whole to the guarded connection pool (connections.py, wire.py): nothing
here follows a redirect, reads a proxy or netrc from the environment, keeps cookies or decodes
a compressed body, and no CPU goes on any of that.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import msgspec
from prometheus_client import Counter, Histogram

from agentlasso.agent_wire.a2a import A2aPending
from agentlasso.agent_wire.calls import AgentCallResult, AgentTarget
from agentlasso.agent_wire.protocols import decode_answer, encode_poll, encode_request
from agentlasso.agent_wire.replies import Reply
from agentlasso.agents.address_guard import AddressRefused, Resolver, resolve_host
from agentlasso.agents.connections import ConnectionPool
from agentlasso.agents.failures import (
    answered_status,
    connection_failed,
    encoded_answer,
    headers_over_limit,
    over_limit,
    request_refused,
    task_unfinished,
    timed_out,
    with_tries,
)
from agentlasso.agents.http1 import (
    Answer,
    AnswerLimits,
    ConnectFailed,
    ConnectionBroken,
    HeadersTooLarge,
)
from agentlasso.agents.requests import (
    Endpoint,
    Exchange,
    card_request,
    header_value,
    parse_endpoint,
    request_head,
)
from agentlasso.agents.transport import GuardedConnector, agent_ssl_context
from agentlasso.config import Settings
from agentlasso.domain.agent_calls import Attempt
from agentlasso.domain.trace_context import new_traceparent
from agentlasso.observability import metrics
from agentlasso.retry_policy import RETRYABLE_STATUSES, RetryPolicy, Sleep, retry_after_s

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
# An answer's head (and any trailers): nginx reads 4 to 32 KiB of headers, Node 16 KiB.
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
DEFAULT_MAX_HEADERS = 100
_INVALID = "invalid_reply"
_ENDPOINT_CACHE_SIZE = 4096
# How often an A2A task still running is asked about: soon at first, then every second.
_FIRST_POLL_S = 0.1
_MAX_POLL_S = 1.0


class _Outcome(msgspec.Struct, frozen=True):
    """How one attempt ended: a reply, or an error and whether trying again could help."""

    status: int | None
    error: str | None
    reply: Reply | None = None
    # An A2A task the agent is still working on: asked about again within the timeout.
    pending: A2aPending | None = None
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
        self._endpoints: dict[str, Endpoint | str] = {}
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
        trace_id, traceparent = new_traceparent()
        exchange = Exchange(endpoint.origin, head, traceparent, target)
        request = exchange.request(encode_request(target, body))
        attempts: list[Attempt] = []
        while True:
            outcome, latency_ms = await self._attempt(exchange, request)
            attempts.append(Attempt(len(attempts) + 1, outcome.status, latency_ms, outcome.error))
            if not outcome.retryable or len(attempts) >= self._retry.max_attempts:
                return _result(outcome, tuple(attempts), _elapsed_ms(started), trace_id)
            await self._sleep(self._retry.delay_s(len(attempts), outcome.retry_after_s))

    async def fetch(self, url: str, headers: Mapping[str, str], timeout_s: float) -> bytes | str:
        """GET a document the agent publishes (an A2A agent card), once, under the same guard,
        caps and refusal of redirects as a call: its body, or a sentence saying why not."""
        endpoint = self._endpoint(url)
        if isinstance(endpoint, str):
            return endpoint
        request = card_request(endpoint, headers)
        if request is None:
            return request_refused()
        answer = await self._exchange_once(endpoint, request, timeout_s)
        if isinstance(answer, str):
            return answer
        if not 200 <= answer.status < 300:
            return answered_status(answer.status)
        if answer.body is None:
            return over_limit(self._max_body_bytes)
        return answer.body

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout_s: float
    ) -> int | str:
        """POST a JSON body once (an alert's webhook), under the same guard, caps and refusal
        of redirects as a call: the answer's status, or a sentence saying why there is none."""
        endpoint = self._endpoint(url)
        if isinstance(endpoint, str):
            return endpoint
        head = request_head(endpoint, headers)
        if head is None:
            return request_refused()
        answer = await self._exchange_once(
            endpoint, b"%s%d\r\n\r\n%s" % (head, len(body), body), timeout_s
        )
        return answer if isinstance(answer, str) else answer.status

    async def _exchange_once(
        self, endpoint: Endpoint, request: bytes, timeout_s: float
    ) -> Answer | str:
        """One request and its answer within the timeout, or why there is no answer."""
        try:
            async with asyncio.timeout(timeout_s):
                return await self._pool.exchange(endpoint.origin, request)
        except TimeoutError:
            return timed_out(timeout_s)
        except AddressRefused as exc:
            return str(exc)
        except HeadersTooLarge as exc:
            return headers_over_limit(exc)
        except (ConnectFailed, ConnectionBroken, OSError) as exc:
            return connection_failed(exc)

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

    def _endpoint(self, url: str) -> Endpoint | str:
        """The parsed URL, or why it cannot be called; cached, as most calls repeat a few URLs."""
        endpoint = self._endpoints.get(url)
        if endpoint is None:
            if len(self._endpoints) >= _ENDPOINT_CACHE_SIZE:
                self._endpoints.clear()
            endpoint = self._endpoints[url] = parse_endpoint(url)
        return endpoint

    def _head(self, target: AgentTarget, endpoint: Endpoint) -> bytes | None:
        """The request's head up to its Content-Length value, or None when a stored header
        cannot be sent in HTTP; cached, as most calls repeat a few agents."""
        key = (target.url, tuple(target.headers.items()))
        if key not in self._heads:
            if len(self._heads) >= _ENDPOINT_CACHE_SIZE:
                self._heads.clear()
            self._heads[key] = request_head(endpoint, target.headers)
        return self._heads[key]

    async def _attempt(self, exchange: Exchange, request: bytes) -> tuple[_Outcome, int]:
        """One try within the timeout, which covers connect, send, reading the whole body and
        following an A2A task to its end."""
        started = time.perf_counter()
        timeout_s = exchange.target.timeout_s
        outcome: _Outcome | None = None
        try:
            # One deadline for the whole exchange: per-read timeouts never fire for a server
            # that sends a byte every half second.
            async with asyncio.timeout(timeout_s):
                answer = await self._pool.exchange(exchange.origin, request)
                outcome = self._read_answer(answer, exchange.target.protocol)
                outcome = await self._follow(exchange, outcome)
        except TimeoutError:
            outcome = _timed_out(outcome, timeout_s)
        except AddressRefused as exc:
            outcome = _Outcome(None, str(exc), kind="refused")
        except HeadersTooLarge as exc:  # the agent would only send them again: not retried
            outcome = _Outcome(None, headers_over_limit(exc), kind=_INVALID)
        except (ConnectFailed, ConnectionBroken, OSError) as exc:
            outcome = _Outcome(None, connection_failed(exc), retryable=True, kind="connection")
        return outcome, _elapsed_ms(started)

    async def _follow(self, exchange: Exchange, outcome: _Outcome) -> _Outcome:
        """An A2A task asked about until it ends (the caller's deadline bounds the wait)."""
        wait_s = _FIRST_POLL_S
        while outcome.pending is not None:
            await asyncio.sleep(wait_s)
            wait_s = min(wait_s * 2, _MAX_POLL_S)
            request = exchange.request(encode_poll(outcome.pending))
            answer = await self._pool.exchange(exchange.origin, request)
            outcome = self._read_answer(answer, exchange.target.protocol)
        return outcome

    def _read_answer(self, answer: Answer, protocol: str) -> _Outcome:
        """The reply in a 2xx answer, or what is wrong with the answer."""
        status = answer.status
        if not 200 <= status < 300:
            return _status_failure(status, answer.headers)
        encoding = header_value(answer.headers, b"content-encoding").strip().lower()
        if encoding not in (b"", b"identity"):
            return _Outcome(status, encoded_answer(encoding.decode("latin-1")), kind=_INVALID)
        if answer.body is None:
            return _Outcome(status, over_limit(self._max_body_bytes), kind=_INVALID)
        reply = decode_answer(protocol, answer.body)
        if isinstance(reply, str):
            return _Outcome(status, reply, kind=_INVALID)
        if isinstance(reply, A2aPending):
            return _Outcome(status, None, pending=reply)
        return _Outcome(status, None, reply=reply)


def _timed_out(outcome: _Outcome | None, timeout_s: float) -> _Outcome:
    """A try out of time: retried, unless it was an A2A task still running (asking the agent
    again would start another task, and take as long)."""
    if outcome is not None and outcome.pending is not None:
        pending = outcome.pending
        error = task_unfinished(pending.task_id, pending.state, timeout_s)
        return _Outcome(outcome.status, error, kind="timeout")
    return _Outcome(None, timed_out(timeout_s), retryable=True, kind="timeout")


def _status_failure(status: int, headers: list[tuple[bytes, bytes]]) -> _Outcome:
    """A non-2xx answer: retryable for 429 and 502-504, with the wait the agent asked for."""
    if status not in RETRYABLE_STATUSES:
        return _Outcome(status, answered_status(status), kind="http_status")
    asked_s = retry_after_s(header_value(headers, b"retry-after").decode("latin-1"))
    return _Outcome(
        status, answered_status(status), retryable=True, retry_after_s=asked_s, kind="http_status"
    )


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
