"""An agent connection's limits outside the body, whatever pieces the bytes arrive in.

TCP decides where an answer is cut into reads; these tests decide it instead (Hypothesis
draws the cuts), by handing the bytes to the connection's protocol as its transport would.
The tests against real servers are in tests/integration/test_agent_answer_heads.py.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlasso.agents.http1 import AgentConnection, Answer, AnswerLimits, HeadersTooLarge

LIMITS = AnswerLimits(max_body_bytes=1 << 20, max_header_bytes=1024, max_headers=10)
REPLY = b'{"output": "ok"}'


class HeldTransport(asyncio.Transport):
    """Where the connection writes its request; remembers whether it was closed."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def write(self, data: Any) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def answered(pieces: list[bytes], limits: AnswerLimits = LIMITS) -> tuple[Any, bool]:
    """What one exchange gave (an Answer or the exception) and whether it closed."""

    async def exchange() -> tuple[Any, bool]:
        connection = AgentConnection(limits)
        transport = HeldTransport()
        connection.connection_made(transport)
        pending = asyncio.ensure_future(connection.exchange(b"POST / HTTP/1.1\r\n\r\n"))
        await asyncio.sleep(0)
        for piece in pieces:
            connection.data_received(piece)
        try:
            result: Any = await asyncio.wait_for(pending, 1)
        except (HeadersTooLarge, TimeoutError) as exc:
            result = exc
        return result, transport.closed

    return asyncio.run(exchange())


def cut(data: bytes, cuts: list[int]) -> list[bytes]:
    """The bytes in pieces, cut at these offsets."""
    points = sorted({0, len(data), *(point % (len(data) + 1) for point in cuts)})
    return [data[start:end] for start, end in itertools.pairwise(points)]


def head_of(size: int, *fields: bytes) -> bytes:
    """A 200 whose head, up to and with its blank line, is exactly `size` bytes."""
    start = b"HTTP/1.1 200 OK\r\n" + b"".join(fields)
    end = b"Content-Length: %d\r\n\r\n" % len(REPLY)
    padding = size - len(start) - len(b"X-Pad: \r\n") - len(end)
    return start + b"X-Pad: " + b"a" * padding + b"\r\n" + end


CUTS = st.lists(st.integers(min_value=0), max_size=40)


@settings(max_examples=150, deadline=None)
@given(cuts=CUTS)
def test_a_head_of_exactly_the_limit_is_read_however_it_is_cut(cuts: list[int]) -> None:
    result, closed = answered(cut(head_of(1024) + REPLY, cuts))
    assert isinstance(result, Answer) and result.body == REPLY
    assert not closed


@settings(max_examples=150, deadline=None)
@given(cuts=CUTS)
def test_one_byte_more_is_refused_however_it_is_cut(cuts: list[int]) -> None:
    result, closed = answered(cut(head_of(1025) + REPLY, cuts))
    assert isinstance(result, HeadersTooLarge) and result.what == "bytes"
    assert closed


def test_a_huge_value_in_one_piece_is_refused_and_the_connection_closed() -> None:
    result, closed = answered([b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (8 << 20)])
    assert isinstance(result, HeadersTooLarge) and result.limit == 1024
    assert closed


@settings(max_examples=50, deadline=None)
@given(cuts=CUTS)
def test_a_body_in_many_tiny_chunks_is_not_mistaken_for_a_head(cuts: list[int]) -> None:
    # A server streaming a token at a time: its chunk framing alone is far over 1 KiB.
    chunks = b"".join(b"1\r\n%c\r\n" % byte for byte in b" " * 3000)
    data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    result, _ = answered(cut(data, cuts))
    assert isinstance(result, Answer) and result.body == b" " * 3000


def test_trailers_count_as_fields_and_as_bytes_outside_the_body() -> None:
    body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n" % (
        len(REPLY),
        REPLY,
    )
    many, _ = answered([body + b"".join(b"T%d: 1\r\n" % n for n in range(20)) + b"\r\n"])
    flood, _ = answered([body + b"T: " + b"a" * 8192, b"a" * 8192])
    assert isinstance(many, HeadersTooLarge) and many.what == "fields"
    assert isinstance(flood, HeadersTooLarge) and flood.what == "bytes"


def test_a_100_continue_then_the_answer_is_read() -> None:
    data = b"HTTP/1.1 100 Continue\r\n\r\n" + head_of(1000) + REPLY
    result, _ = answered([data])
    assert isinstance(result, Answer) and result.status == 200 and result.body == REPLY


def test_bytes_past_the_answer_close_the_connection() -> None:
    result, closed = answered([head_of(200) + REPLY + b"HTTP/1.1 200 OK\r\n"])
    assert isinstance(result, Answer) and result.body == REPLY
    assert closed, "the next exchange would read them as its answer"
