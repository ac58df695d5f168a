"""The agent client against real HTTP servers on 127.0.0.1.

Nothing here reaches beyond loopback: every test runs under `loopback_only`, which blocks (and
records) any socket connect to another address, so an address-guard bug fails a test instead of
sending a packet. Addresses that must not be contacted come from injected resolvers.
"""

from __future__ import annotations

import asyncio
import email.utils
import socket
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import pytest_asyncio

from agentlasso.agents import AgentCallResult, AgentClient, AgentTarget, check_agent_url
from agentlasso.grading import observation_from_wire
from tests.support.agent_servers import (
    AgentRequest,
    Handler,
    ScriptedAgent,
    Writer,
    chunked_answer,
    drip,
    echo_answer,
    gzip_bomb_answer,
    hang,
    json_answer,
    raw_answer,
    response_head,
    self_signed_tls,
)
from tests.support.fake_agent import running_fake_agent
from tests.support.waiting import RecordedSleep

REPLY = {"output": "Refunded.", "tool_calls": []}
BODY = {"input": "refund order 1234", "source": "agentlasso-test", "trial": 1, "context": {}}
PUBLIC_IP = "93.184.215.14"  # only ever handed out by a resolver, never connected to
StartAgent = Callable[..., Awaitable[ScriptedAgent]]


# Every connect to a non-loopback address fails the test (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("loopback_only")


@pytest_asyncio.fixture
async def start_agent() -> AsyncIterator[StartAgent]:
    """Start scripted fake agents on 127.0.0.1; all are stopped after the test."""
    agents: list[ScriptedAgent] = []

    async def start(*handlers: Handler, ssl_context: Any = None) -> ScriptedAgent:
        agent = await ScriptedAgent(handlers, ssl_context=ssl_context).start()
        agents.append(agent)
        return agent

    yield start
    for agent in agents:
        await agent.close()


async def call_once(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    timeout_s: float = 5.0,
    **client_options: Any,
) -> AgentCallResult:
    """One call through a fresh client (loopback allowed unless the test says otherwise)."""
    options: dict[str, Any] = {
        "max_connections": 10,
        "allow_private": True,
        "backoff_base_s": 0.01,
        **client_options,
    }
    async with AgentClient(**options) as client:
        return await client.call(AgentTarget(url, headers or {}, timeout_s), BODY)


def resolver_answering(*answers: list[str]) -> Callable[[str, int], Awaitable[list[str]]]:
    """A resolver giving these answers in turn (the last one repeats), recording each question."""
    asked: list[tuple[str, int]] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return answers[min(len(asked), len(answers)) - 1]

    resolve.asked = asked  # type: ignore[attr-defined]
    return resolve


def statuses(result: AgentCallResult) -> list[int | None]:
    return [attempt.status for attempt in result.attempts]


# The answer


async def test_reply_with_every_tool_call_shape_passes_through_untouched(
    start_agent: StartAgent,
) -> None:
    tool_calls = [
        {"name": "orders.lookup", "arguments": '{"order": 1234}'},
        {"type": "function", "function": {"name": "stripe.refund", "arguments": '{"amount": 20}'}},
        {"type": "tool_use", "id": "tu_1", "name": "email.send", "input": {"to": "a@b.c"}},
    ]
    agent = await start_agent(json_answer({"output": "Refunded.", "tool_calls": tool_calls}))

    result = await call_once(agent.url)

    assert result.error is None
    assert result.actual_output == "Refunded."
    assert result.actual_tool_calls == tool_calls
    assert statuses(result) == [200]
    observation = observation_from_wire(result.actual_output, result.actual_tool_calls)
    assert [call.name for call in observation.tool_calls or ()] == [
        "orders.lookup",
        "stripe.refund",
        "email.send",
    ]


async def test_request_is_a_json_post_with_the_agents_headers(start_agent: StartAgent) -> None:
    agent = await start_agent(json_answer(REPLY))

    await call_once(agent.url, headers={"Authorization": "Bearer s3cret", "X-Team": "billing"})

    [request] = agent.requests
    assert (request.method, request.path) == ("POST", "/agent")
    assert request.json() == BODY
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept-encoding"] == "identity"
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["x-team"] == "billing"
    assert request.headers["host"] == f"127.0.0.1:{agent.port}"


async def test_stored_headers_cannot_replace_the_clients_own(start_agent: StartAgent) -> None:
    agent = await start_agent(json_answer(REPLY))
    sneaky = {"Accept-Encoding": "gzip", "content-type": "text/plain", "Host": "evil.example"}

    result = await call_once(agent.url, headers=sneaky)

    assert result.error is None
    [request] = agent.requests
    assert request.headers["accept-encoding"] == "identity"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["host"] == f"127.0.0.1:{agent.port}"


async def test_header_with_a_line_break_is_refused_not_sent(start_agent: StartAgent) -> None:
    agent = await start_agent(json_answer(REPLY))

    result = await call_once(agent.url, headers={"X-Key": "k\r\nX-Injected: 1"})

    assert result.error is not None
    assert result.error.startswith("the request to the agent cannot be sent")
    assert len(result.attempts) == 1
    assert all("x-injected" not in request.headers for request in agent.requests)


async def test_missing_tool_calls_are_unreported_not_empty(start_agent: StartAgent) -> None:
    agent = await start_agent(json_answer({"output": "Hello"}), json_answer({"tool_calls": []}))

    only_output = await call_once(agent.url)
    only_calls = await call_once(agent.url)

    assert only_output.actual_output == "Hello"
    assert only_output.actual_tool_calls is msgspec.UNSET
    assert only_calls.actual_output is msgspec.UNSET
    assert only_calls.actual_tool_calls == []
    assert only_output.error is None and only_calls.error is None


async def test_output_that_is_not_a_string_is_kept_as_decoded_json(
    start_agent: StartAgent,
) -> None:
    agent = await start_agent(json_answer({"output": {"order": 1234, "refunded": True}}))

    result = await call_once(agent.url)

    assert result.actual_output == {"order": 1234, "refunded": True}


async def test_garbage_is_not_json(start_agent: StartAgent) -> None:
    agent = await start_agent(raw_answer(200, b"<html>Internal oops</html>"))

    result = await call_once(agent.url)

    assert result.error is not None
    assert result.error.startswith("the agent's answer is not JSON: ")
    assert "<html>Internal oops" in result.error
    assert result.actual_output is msgspec.UNSET
    assert statuses(result) == [200]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"[1, 2]", "the agent's answer is a JSON array, not a JSON object"),
        (b'"Refunded."', "the agent's answer is a JSON string, not a JSON object"),
        (b"null", "the agent's answer is JSON null, not a JSON object"),
        (b"", "the agent's answer is empty, not a JSON object"),
        (b"[" * 100_000, "the agent's answer is JSON nested too deeply to read"),
    ],
)
async def test_json_that_is_not_an_object_is_a_failure(
    start_agent: StartAgent, body: bytes, error: str
) -> None:
    agent = await start_agent(raw_answer(200, body))

    result = await call_once(agent.url)

    assert result.error == error
    assert len(agent.requests) == 1


# Size and encoding


async def test_body_over_the_limit_is_refused_from_its_content_length(
    start_agent: StartAgent,
) -> None:
    agent = await start_agent(raw_answer(200, b" " * (5 * 1024 * 1024)))

    result = await call_once(agent.url)

    assert result.error == "the agent's answer is over the 1 MiB limit"
    assert statuses(result) == [200]


async def test_body_over_the_limit_is_refused_while_streaming(start_agent: StartAgent) -> None:
    agent = await start_agent(chunked_answer(5 * 1024 * 1024))

    result = await call_once(agent.url)

    assert result.error == "the agent's answer is over the 1 MiB limit"
    assert len(result.attempts) == 1


async def test_body_exactly_at_the_limit_is_read(start_agent: StartAgent) -> None:
    body = b'{"output": "' + b"a" * 86 + b'"}'
    assert len(body) == 100
    agent = await start_agent(raw_answer(200, body), raw_answer(200, body + b" "))

    at_limit = await call_once(agent.url, max_body_bytes=100)
    over_limit = await call_once(agent.url, max_body_bytes=100)

    assert at_limit.error is None
    assert at_limit.actual_output == "a" * 86
    assert over_limit.error == "the agent's answer is over the 100 bytes limit"


async def test_gzip_sent_anyway_is_not_inflated(start_agent: StartAgent) -> None:
    agent = await start_agent(gzip_bomb_answer(inflated_bytes=50 * 1024 * 1024))

    tracemalloc.start()
    try:
        result = await call_once(agent.url)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert agent.requests[0].headers["accept-encoding"] == "identity"
    assert result.error == (
        "the agent's answer is gzip-encoded, which the platform does not decode "
        "(it asks for identity)"
    )
    assert peak_bytes < 5 * 1024 * 1024  # the 50 MB it inflates to was never built


# Statuses, retries and waits


async def test_503_twice_then_a_reply(start_agent: StartAgent) -> None:
    busy = json_answer({"error": "busy"}, status=503)
    agent = await start_agent(busy, busy, json_answer(REPLY))

    result = await call_once(agent.url)

    assert result.error is None
    assert result.actual_output == "Refunded."
    assert statuses(result) == [503, 503, 200]
    assert [attempt.number for attempt in result.attempts] == [1, 2, 3]
    assert [attempt.error for attempt in result.attempts] == [
        "the agent answered HTTP 503",
        "the agent answered HTTP 503",
        None,
    ]


@pytest.mark.parametrize("status", [429, 502, 503, 504])
async def test_retryable_statuses_give_up_after_max_attempts(
    start_agent: StartAgent, status: int
) -> None:
    agent = await start_agent(json_answer({}, status=status))

    result = await call_once(agent.url, max_attempts=3)

    assert result.error == f"the agent answered HTTP {status} (3 tries)"
    assert statuses(result) == [status] * 3
    assert len(agent.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422, 500])
async def test_other_statuses_are_not_retried(start_agent: StartAgent, status: int) -> None:
    agent = await start_agent(json_answer({"error": "no"}, status=status))

    result = await call_once(agent.url)

    assert result.error == f"the agent answered HTTP {status}"
    assert statuses(result) == [status]
    assert len(agent.requests) == 1


async def test_redirect_is_not_followed_nor_retried(start_agent: StartAgent) -> None:
    target = await start_agent(json_answer(REPLY))
    agent = await start_agent(raw_answer(302, b"", {"location": target.url}))

    result = await call_once(agent.url)

    assert result.error == "the agent answered HTTP 302 (a redirect, not followed)"
    assert statuses(result) == [302]
    assert target.requests == []


async def test_retry_after_seconds_is_waited(start_agent: StartAgent) -> None:
    agent = await start_agent(
        json_answer({}, status=429, headers={"retry-after": "1"}), json_answer(REPLY)
    )

    sleep = RecordedSleep()
    result = await call_once(agent.url, sleep=sleep)

    assert result.error is None
    assert statuses(result) == [429, 200]
    assert sleep.delays_s == [1.0]


async def test_retry_after_as_an_http_date_is_waited(start_agent: StartAgent) -> None:
    later = email.utils.formatdate(time.time() + 2, usegmt=True)
    agent = await start_agent(
        json_answer({}, status=503, headers={"retry-after": later}), json_answer(REPLY)
    )

    sleep = RecordedSleep()
    result = await call_once(agent.url, sleep=sleep)

    assert statuses(result) == [503, 200]
    [delay_s] = sleep.delays_s
    assert 0.5 <= delay_s <= 2.0  # the date has whole-second precision


async def test_huge_retry_after_is_capped(start_agent: StartAgent) -> None:
    agent = await start_agent(
        json_answer({}, status=503, headers={"retry-after": "86400"}), json_answer(REPLY)
    )

    sleep = RecordedSleep()
    result = await call_once(agent.url, retry_after_cap_s=10.0, sleep=sleep)

    assert statuses(result) == [503, 200]
    assert sleep.delays_s == [10.0]


# Timeouts


async def test_agent_that_never_answers_times_out(start_agent: StartAgent) -> None:
    agent = await start_agent(hang())

    started = time.monotonic()
    result = await call_once(agent.url, timeout_s=0.5, max_attempts=1)

    assert result.error == "the agent call timed out after 0.5 s"
    assert statuses(result) == [None]
    assert 0.5 <= time.monotonic() - started < 2.0


async def test_agent_dripping_a_byte_at_a_time_times_out(start_agent: StartAgent) -> None:
    agent = await start_agent(drip(byte_every_s=0.1, total_bytes=1000))

    started = time.monotonic()
    result = await call_once(agent.url, timeout_s=0.5, max_attempts=1)

    assert result.error == "the agent call timed out after 0.5 s"
    assert statuses(result) == [None]
    assert 0.5 <= time.monotonic() - started < 2.0


async def test_timeouts_are_retried_and_counted(start_agent: StartAgent) -> None:
    agent = await start_agent(hang())

    result = await call_once(agent.url, timeout_s=0.2, max_attempts=3)

    assert result.error == "the agent call timed out after 0.2 s (3 tries)"
    assert len(result.attempts) == 3
    assert len(agent.requests) == 3


async def test_slow_first_answer_then_a_reply_within_the_timeout(start_agent: StartAgent) -> None:
    agent = await start_agent(hang(), json_answer(REPLY))

    result = await call_once(agent.url, timeout_s=0.3)

    assert result.error is None
    assert [attempt.error for attempt in result.attempts] == [
        "the agent call timed out after 0.3 s",
        None,
    ]


# Connections


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_connection_refused_is_retried_then_reported() -> None:
    result = await call_once(f"http://127.0.0.1:{closed_port()}/agent")

    assert result.error == "could not connect to the agent: connection refused (3 tries)"
    assert statuses(result) == [None, None, None]


async def test_connections_are_reused_and_resolved_once(start_agent: StartAgent) -> None:
    agent = await start_agent(json_answer(REPLY))
    resolver = resolver_answering(["127.0.0.1"])
    url = f"http://agent.test:{agent.port}/agent"

    async with AgentClient(max_connections=4, allow_private=True, resolver=resolver) as client:
        results = [await client.call(AgentTarget(url, {}, 5.0), BODY) for _ in range(5)]

    assert [result.error for result in results] == [None] * 5
    assert agent.connections == 1
    assert resolver.asked == [("agent.test", agent.port)]  # type: ignore[attr-defined]


async def test_concurrent_calls_share_at_most_max_connections(start_agent: StartAgent) -> None:
    async def slow_reply(request: AgentRequest, writer: Writer) -> None:
        await asyncio.sleep(0.02)
        await json_answer(REPLY)(request, writer)

    agent = await start_agent(slow_reply)

    async with AgentClient(max_connections=5, allow_private=True) as client:
        target = AgentTarget(agent.url, {}, 10.0)
        results = await asyncio.gather(*(client.call(target, BODY) for _ in range(60)))

    assert [result.error for result in results] == [None] * 60
    assert agent.connections <= 5


async def test_a_full_pool_closes_another_agents_idle_connection(start_agent: StartAgent) -> None:
    agents = [await start_agent(json_answer(REPLY)) for _ in range(3)]

    async with AgentClient(max_connections=2, allow_private=True) as client:
        results = [
            await client.call(AgentTarget(agent.url, {}, 5.0), BODY) for agent in agents + agents
        ]
        await asyncio.sleep(0.05)  # the servers see the closed connections
        open_connections = sum(agent.open_connections for agent in agents)

    assert [result.error for result in results] == [None] * 6
    assert open_connections <= 2


async def test_server_hanging_up_between_calls_costs_no_attempt(start_agent: StartAgent) -> None:
    async def answer_then_hang_up(request: AgentRequest, writer: Writer) -> None:
        await json_answer(REPLY)(request, writer)
        await writer.drain()
        writer.close()

    agent = await start_agent(answer_then_hang_up)

    async with AgentClient(max_connections=4, allow_private=True) as client:
        target = AgentTarget(agent.url, {}, 5.0)
        first = await client.call(target, BODY)
        await asyncio.sleep(0.1)  # the server's FIN arrives; the idle connection is stale
        second = await client.call(target, BODY)

    assert (first.error, second.error) == (None, None)
    assert len(second.attempts) == 1
    assert agent.connections == 2


async def test_answer_with_connection_close_is_not_reused(start_agent: StartAgent) -> None:
    async def close_after(request: AgentRequest, writer: Writer) -> None:
        body = msgspec.json.encode(REPLY)
        head = {"content-length": str(len(body)), "connection": "close"}
        writer.write(response_head(200, head) + body)
        await writer.drain()
        writer.close()

    agent = await start_agent(close_after)

    async with AgentClient(max_connections=4, allow_private=True) as client:
        target = AgentTarget(agent.url, {}, 5.0)
        results = [await client.call(target, BODY) for _ in range(3)]

    assert [len(result.attempts) for result in results] == [1, 1, 1]
    assert agent.connections == 3


async def test_url_that_is_not_http_is_refused_at_call_time() -> None:
    result = await call_once("ftp://127.0.0.1/agent")

    assert result.error == "the agent URL must start with http:// or https://"
    assert statuses(result) == [None]


async def test_tls_keeps_the_host_name_while_connecting_to_the_checked_ip(
    start_agent: StartAgent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_tls, certificate = self_signed_tls("agent.test", tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))  # read when the client is made
    agent = await start_agent(echo_answer(), ssl_context=server_tls)

    result = await call_once(
        f"https://agent.test:{agent.port}/agent",
        resolver=resolver_answering(["127.0.0.1"]),
    )

    assert result.error is None
    assert agent.sni_names == ["agent.test"]
    assert agent.requests[0].headers["host"] == f"agent.test:{agent.port}"


async def test_tls_certificate_for_another_name_is_refused(
    start_agent: StartAgent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_tls, certificate = self_signed_tls("other.test", tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
    agent = await start_agent(echo_answer(), ssl_context=server_tls)

    result = await call_once(
        f"https://agent.test:{agent.port}/agent",
        resolver=resolver_answering(["127.0.0.1"]),
        max_attempts=1,
    )

    assert result.error is not None
    assert result.error.startswith("could not connect to the agent: the TLS certificate")
    assert agent.requests == []


# The address guard


@pytest.mark.parametrize("host", ["127.0.0.1", "0x7f000001", "2130706433", "127.1"])
async def test_loopback_is_refused_without_connecting(start_agent: StartAgent, host: str) -> None:
    agent = await start_agent(json_answer(REPLY))

    result = await call_once(f"http://{host}:{agent.port}/agent", allow_private=False)

    assert result.error == ("the agent URL resolves to a loopback address, which is not allowed")
    assert statuses(result) == [None]  # refused once, not retried
    assert agent.connections == 0


async def test_octal_loopback_is_not_even_a_url(start_agent: StartAgent) -> None:
    agent = await start_agent(json_answer(REPLY))

    result = await call_once(f"http://0177.0.0.1:{agent.port}/agent", allow_private=False)

    assert result.error == "the agent URL is not a valid URL: Invalid IPv4 address: '0177.0.0.1'"
    assert agent.connections == 0


async def test_ipv6_loopback_literal_is_refused() -> None:
    result = await call_once(f"http://[::1]:{closed_port()}/agent", allow_private=False)

    assert result.error == "the agent URL resolves to a loopback address, which is not allowed"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (["10.0.0.5"], "a private address"),
        (["169.254.169.254"], "the cloud metadata address"),
        (["::ffff:127.0.0.1"], "a loopback address"),
        (["::1"], "a loopback address"),
        (["100.64.1.1"], "a shared (carrier-grade NAT) address"),
        ([PUBLIC_IP, "10.0.0.5"], "a private address"),
        (["fd00::1", PUBLIC_IP], "a private address"),
    ],
)
async def test_internal_addresses_from_dns_are_refused_without_connecting(
    answer: list[str], error: str, loopback_only: list[Any]
) -> None:
    resolver = resolver_answering(answer)

    result = await call_once("http://agent.example/run", allow_private=False, resolver=resolver)

    assert result.error == f"the agent URL resolves to {error}, which is not allowed"
    assert statuses(result) == [None]
    assert loopback_only == []


async def test_loopback_is_called_when_private_agents_are_allowed(
    start_agent: StartAgent,
) -> None:
    agent = await start_agent(json_answer(REPLY))

    result = await call_once(agent.url, allow_private=True)

    assert result.error is None
    assert result.actual_output == "Refunded."


async def test_host_name_answering_loopback_when_allowed_keeps_its_host_header(
    start_agent: StartAgent,
) -> None:
    agent = await start_agent(json_answer(REPLY))

    result = await call_once(
        f"http://agent.test:{agent.port}/agent",
        allow_private=True,
        resolver=resolver_answering(["127.0.0.1"]),
    )

    assert result.error is None
    assert agent.requests[0].headers["host"] == f"agent.test:{agent.port}"


async def test_dns_answer_changed_after_registration_is_refused_at_call_time(
    start_agent: StartAgent,
) -> None:
    agent = await start_agent(json_answer(REPLY))
    rebinding = resolver_answering([PUBLIC_IP], ["127.0.0.1"])
    url = f"http://agent.example:{agent.port}/agent"

    at_registration = await check_agent_url(url, allow_private=False, resolver=rebinding)
    result = await call_once(url, allow_private=False, resolver=rebinding)

    assert at_registration is None
    assert result.error == ("the agent URL resolves to a loopback address, which is not allowed")
    assert agent.connections == 0


async def test_unresolvable_host_is_a_connection_failure() -> None:
    async def nxdomain(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    result = await call_once("http://nowhere.example/agent", resolver=nxdomain, max_attempts=2)

    assert (
        result.error == "could not connect to the agent: the host name does not resolve (2 tries)"
    )


async def test_a_burst_of_calls_to_a_server_with_a_small_listen_backlog_is_not_stalled() -> None:
    # Python's http.server listens with a backlog of 5. A chunk's 200 calls opening 200
    # connections at once overflowed it, and the connects it dropped waited out TCP's
    # retransmissions (1 s, 3 s, 7 s...): calls took up to 30 s against an agent answering in
    # 0.3 s. Connections are now opened a few at a time per origin.
    with running_fake_agent() as agent:
        agent.delay_s = 0.3
        target = AgentTarget(url=agent.url, headers={}, timeout_s=30)
        async with AgentClient(max_connections=200, allow_private=True) as client:

            async def timed_call() -> tuple[float, AgentCallResult]:
                began = time.monotonic()
                result = await client.call(target, {"input": "refund"})
                return time.monotonic() - began, result

            calls = await asyncio.gather(*(timed_call() for _ in range(200)))
    assert [result.error for _, result in calls] == [None] * 200
    assert max(taken for taken, _ in calls) < 10, "no call waited out TCP retransmissions"
