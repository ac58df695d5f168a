"""An agent's answer is bounded outside its body too: headers, their count, trailers.

Each agent here is a raw asyncio server on 127.0.0.1 written for the test, sending what a
hostile agent would: a flood of header lines, one huge header value, too many fields, a flood
of trailers, a head a byte at a time. The real agent client is called directly, then through
the API's invoke, the editor's preview, Send test message and a server-mode run in a worker
process. What is asserted is the refusal and its words, that the agent was cut off before it
had sent its flood, that nothing was retried, and how much memory the call took: not timings.
"""

from __future__ import annotations

import asyncio
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import httpx
import pytest
import pytest_asyncio

from agentlasso.agents import AgentCallResult, AgentClient, AgentTarget
from tests.support.agent_servers import read_request
from tests.support.api import (
    all_results,
    create_dataset,
    dataset_of,
    register_agent,
    start_run,
    wait_final,
)
from tests.support.processes import WorkerProcesses
from tests.support.web import browser, case_fields, shown_text, signed_in_csrf

REPLY = b'{"output": "Refunded.", "tool_calls": []}'
BODY = {"input": "refund order 1234", "source": "agentlasso-test", "trial": 1, "context": {}}
FLOOD_BYTES = 32 * 1024 * 1024
OVER_BYTES = "the agent's answer headers are over the 64 KiB limit"
OVER_FIELDS = "the agent's answer has more than the 100 header fields the platform reads"
Send = Callable[["Sender"], Awaitable[None]]

pytestmark = pytest.mark.usefixtures("loopback_only")


@dataclass
class Sender:
    """One connection's writing end, counting what got out before the client hung up."""

    writer: asyncio.StreamWriter
    sent_bytes: int = 0

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()
        self.sent_bytes += len(data)


@dataclass
class HostileAgent:
    """Answers every request by running `answer` on the connection; records how each ended."""

    answer: Send
    requests: int = 0
    # Per connection: the bytes written before it ended, and whether the whole answer went out.
    sent_bytes: list[int] = field(default_factory=list)
    finished: list[bool] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/agent"

    async def start(self) -> HostileAgent:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        sender = Sender(writer)
        finished = False
        try:
            while await read_request(reader) is not None:
                self.requests += 1
                await self.answer(sender)
            finished = True
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.sent_bytes.append(sender.sent_bytes)
            self.finished.append(finished)
            self._tasks.discard(task)  # type: ignore[arg-type]
            writer.close()


def header_flood(total_bytes: int, value_bytes: int = 4096) -> Send:
    """A 200 whose headers go on for total_bytes in lines of value_bytes, then a reply."""

    async def answer(out: Sender) -> None:
        await out.send(b"HTTP/1.1 200 OK\r\n")
        line = b"X-Pad: " + b"a" * value_bytes + b"\r\n"
        for _ in range(total_bytes // len(line)):
            await out.send(line)
        await out.send(_reply_end())

    return answer


def many_fields(count: int) -> Send:
    """A 200 with `count` small header fields (a few KiB in all), then a reply."""

    async def answer(out: Sender) -> None:
        fields = b"".join(b"X-F%d: 1\r\n" % n for n in range(count))
        await out.send(b"HTTP/1.1 200 OK\r\n" + fields + _reply_end())

    return answer


def one_huge_header(total_bytes: int, piece_bytes: int = 16 * 1024) -> Send:
    """A 200 with one header value of total_bytes, sent in pieces, then a reply."""

    async def answer(out: Sender) -> None:
        await out.send(b"HTTP/1.1 200 OK\r\nX-Big: ")
        for _ in range(total_bytes // piece_bytes):
            await out.send(b"a" * piece_bytes)
        await out.send(b"\r\n" + _reply_end())

    return answer


def trailer_flood(total_bytes: int, piece_bytes: int = 16 * 1024) -> Send:
    """A chunked reply whose last chunk is followed by one trailer of total_bytes."""

    async def answer(out: Sender) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked"
        await out.send(head + b"\r\n\r\n%x\r\n%s\r\n0\r\nX-Trailer: " % (len(REPLY), REPLY))
        for _ in range(total_bytes // piece_bytes):
            await out.send(b"a" * piece_bytes)
        await out.send(b"\r\n\r\n")

    return answer


def interim_flood(total_bytes: int) -> Send:
    """Interim answers (103 Early Hints, each a small head) for total_bytes, then a reply."""

    async def answer(out: Sender) -> None:
        hint = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" * 64
        for _ in range(total_bytes // len(hint)):
            await out.send(hint)
        await out.send(b"HTTP/1.1 200 OK\r\n" + _reply_end())

    return answer


def chunked(chunk_extension: bytes, padding_bytes: int = 4000) -> Send:
    """A chunked reply sent a byte a chunk, each chunk's size line carrying the extension."""

    async def answer(out: Sender) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked"
        await out.send(head + b"\r\n\r\n")
        for byte in b" " * padding_bytes + REPLY:
            await out.send(b"1" + chunk_extension + b"\r\n" + bytes([byte]) + b"\r\n")
        await out.send(b"0\r\n\r\n")

    return answer


def head_of(size: int) -> Send:
    """A 200 whose head (status line to the blank line) is exactly `size` bytes."""

    async def answer(out: Sender) -> None:
        end = _reply_end()
        start = b"HTTP/1.1 200 OK\r\nX-Pad: "
        head_end = end.index(b"\r\n\r\n") + 4
        padding = size - len(start) - 2 - head_end
        await out.send(start + b"a" * padding + b"\r\n" + end)

    return answer


def slow_head(byte_every_s: float) -> Send:
    """A status line, then a header a byte at a time (a per-read timeout never fires)."""

    async def answer(out: Sender) -> None:
        await out.send(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        while True:
            await out.send(b"a")
            await asyncio.sleep(byte_every_s)

    return answer


def _reply_end() -> bytes:
    """The rest of a head after its own fields, and the reply."""
    return b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(REPLY), REPLY)


StartAgent = Callable[[Send], Awaitable[HostileAgent]]


@pytest_asyncio.fixture
async def start_agent() -> AsyncIterator[StartAgent]:
    agents: list[HostileAgent] = []

    async def start(answer: Send) -> HostileAgent:
        agents.append(await HostileAgent(answer).start())
        return agents[-1]

    yield start
    for agent in agents:
        await agent.close()


async def call_measured(url: str, **options: object) -> tuple[AgentCallResult, int]:
    """One call (3 attempts allowed) and the most memory the process held during it."""
    tracemalloc.start()
    try:
        async with AgentClient(  # type: ignore[arg-type]
            max_connections=4, allow_private=True, backoff_base_s=0.01, **options
        ) as client:
            result = await client.call(AgentTarget(url, {}, 10.0), BODY)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak_bytes


# The client itself


async def test_a_flood_of_header_lines_is_refused_after_64_kib(start_agent: StartAgent) -> None:
    agent = await start_agent(header_flood(FLOOD_BYTES))

    result, peak_bytes = await call_measured(agent.url)

    assert result.error == OVER_BYTES
    assert [attempt.status for attempt in result.attempts] == [None], "not retried"
    assert agent.requests == 1
    await _cut_off(agent)
    assert peak_bytes < 4 * 1024 * 1024, "the 32 MiB of headers were never held"


async def test_one_huge_header_value_is_refused_before_it_ends(start_agent: StartAgent) -> None:
    agent = await start_agent(one_huge_header(FLOOD_BYTES))

    result, peak_bytes = await call_measured(agent.url)

    assert result.error == OVER_BYTES
    assert len(result.attempts) == 1 and agent.requests == 1
    await _cut_off(agent)
    assert peak_bytes < 4 * 1024 * 1024


async def test_more_than_100_header_fields_are_refused(start_agent: StartAgent) -> None:
    agent = await start_agent(many_fields(1000))

    result, _ = await call_measured(agent.url)

    assert result.error == OVER_FIELDS
    assert len(result.attempts) == 1 and agent.requests == 1


async def test_a_flood_of_trailers_after_the_body_is_refused(start_agent: StartAgent) -> None:
    agent = await start_agent(trailer_flood(FLOOD_BYTES))

    result, peak_bytes = await call_measured(agent.url)

    assert result.error == OVER_BYTES
    assert len(result.attempts) == 1
    await _cut_off(agent)
    assert peak_bytes < 4 * 1024 * 1024


async def test_a_flood_of_interim_answers_is_refused(start_agent: StartAgent) -> None:
    # Each 1xx head is small and ends, so no byte limit saw them: 32 MiB of them were read.
    agent = await start_agent(interim_flood(FLOOD_BYTES))

    result, _ = await call_measured(agent.url)

    assert result.error == "the agent sent more than 10 interim (1xx) answers before its answer"
    assert len(result.attempts) == 1 and agent.requests == 1
    await _cut_off(agent)


async def test_chunk_framing_out_of_proportion_to_the_body_is_refused(
    start_agent: StartAgent,
) -> None:
    # 60 KB of chunk extension per byte of body: each body byte reset the count outside the
    # body, so a 4 KB reply could come in 240 MB of framing, read until the call's timeout.
    flooded = await start_agent(chunked(b";x=" + b"a" * 60_000))
    plain = await start_agent(chunked(b""))  # a byte a chunk: 5 bytes of framing each

    result, peak_bytes = await call_measured(flooded.url)

    assert result.error == "the agent's answer has more chunk framing than a body of its size needs"
    assert len(result.attempts) == 1 and flooded.requests == 1
    await _cut_off(flooded)
    assert peak_bytes < 4 * 1024 * 1024
    assert (await call_measured(plain.url))[0].actual_output == "Refunded."


async def test_100_fields_and_a_head_of_exactly_the_limit_are_read(
    start_agent: StartAgent,
) -> None:
    fields = await start_agent(many_fields(98))  # and Content-Type and Content-Length
    at_limit = await start_agent(head_of(1024))
    over_limit = await start_agent(head_of(1025))

    assert (await call_measured(fields.url))[0].error is None
    assert (await call_measured(at_limit.url, max_header_bytes=1024))[0].error is None
    over, _ = await call_measured(over_limit.url, max_header_bytes=1024)
    assert over.error == "the agent's answer headers are over the 1 KiB limit"


async def test_limits_are_the_clients_settings(start_agent: StartAgent) -> None:
    agent = await start_agent(many_fields(20))

    result, _ = await call_measured(agent.url, max_headers=10)

    assert result.error == (
        "the agent's answer has more than the 10 header fields the platform reads"
    )


async def test_a_head_sent_a_byte_at_a_time_is_bounded_by_the_call_timeout(
    start_agent: StartAgent,
) -> None:
    agent = await start_agent(slow_head(byte_every_s=0.5))

    async with AgentClient(max_connections=1, allow_private=True, max_attempts=1) as client:
        result = await client.call(AgentTarget(agent.url, {}, 1.0), BODY)

    assert result.error == "the agent call timed out after 1 s"
    assert len(result.attempts) == 1


async def _cut_off(agent: HostileAgent) -> None:
    """The agent's connection ended before its answer went out whole (the client hung up)."""
    for _ in range(200):
        if agent.finished:
            break
        await asyncio.sleep(0.05)
    assert agent.finished == [False], "the client read the whole flood"
    assert agent.sent_bytes[0] < FLOOD_BYTES


# Through the API, the web app and a worker


async def test_invoke_says_the_headers_are_over_the_limit(
    client: httpx.AsyncClient, start_agent: StartAgent
) -> None:
    agent = await start_agent(header_flood(FLOOD_BYTES))
    agent_id = await register_agent(client, agent.url, timeout_s=10)

    response = await client.post(f"/api/v1/agents/{agent_id}/invoke", json={"input": "hi"})

    assert response.status_code == 200, response.text
    assert response.json()["error"] == OVER_BYTES
    assert response.json()["attempts"] == 1


async def test_preview_and_send_test_message_say_it_in_words(
    base_url: str, api_key: str, client: httpx.AsyncClient, start_agent: StartAgent
) -> None:
    agent = await start_agent(one_huge_header(FLOOD_BYTES))
    await register_agent(client, agent.url, timeout_s=10)
    dataset = await create_dataset(client)
    async with browser(base_url) as web:
        csrf = await signed_in_csrf(web, api_key)
        tried = await web.post(
            "/settings/agent/test", data={"csrf_token": csrf, "message": "Hello"}
        )
        preview = {"csrf_token": csrf, **case_fields(action="preview")}
        previewed = await web.post(f"/datasets/{dataset['id']}/cases/new", data=preview)

    assert tried.status_code == 200
    assert f"Error: {OVER_BYTES}" in shown_text(tried.text)
    assert "1 attempt " in shown_text(tried.text)
    assert previewed.status_code == 200
    assert OVER_BYTES in shown_text(previewed.text)
    assert agent.requests == 2, "each called once, neither retried"


async def test_a_runs_result_records_the_one_refused_attempt(
    client: httpx.AsyncClient, start_agent: StartAgent, workers: WorkerProcesses
) -> None:
    workers.start()
    flood = await start_agent(header_flood(FLOOD_BYTES))
    fields = await start_agent(many_fields(1000))
    for agent, error in ((flood, OVER_BYTES), (fields, OVER_FIELDS)):
        agent_id = await register_agent(client, agent.url, timeout_s=10)
        dataset_id = await dataset_of(client, ["refund 1"])
        run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)

        final = await wait_final(client, run["run_id"])

        assert final["status"] == "completed", final
        [result] = await all_results(client, run["run_id"])
        call = result["agent_call"]
        assert call["error"] == error
        assert [attempt["status"] for attempt in call["attempts"]] == [None]
        assert call["attempts"][0]["error"] == error
        assert agent.requests == 1
