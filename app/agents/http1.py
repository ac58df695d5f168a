"""One keep-alive HTTP/1.1 connection to an agent, as an asyncio protocol.

The agent client used httpcore (over anyio and h11) until a profile showed it was 70% of a
worker's CPU per case: about 330 µs a call. This protocol writes a request in one piece and
parses the answer with llhttp (httptools, the parser uvicorn uses): about 30 µs a call
(tests/perf/bench_cost_per_case.py). It speaks just what an agent call needs: one exchange at
a time, a body read whole up to a cap, keep-alive when the server allows it.

The head is capped too, in raw bytes before the parser sees them: llhttp's callbacks build a
header value by appending each piece it is fed, so one huge value arriving in pieces costs
quadratic time (32 MB took 4.6 s of the event loop), and 1 GB of headers was 1.1 GB held.
Past the cap nothing more is fed: 64 KiB fed a byte at a time costs about 50 ms at worst.
Bytes besides the body's are bounded over the whole answer as well (chunk framing in
proportion to the body), since each body byte starts the head's count again.
"""

from __future__ import annotations

import asyncio
import time
from typing import NamedTuple

import httptools


class Answer(NamedTuple):
    """A whole answer: its status, headers (names in lower case) and body, or None for the
    body when it was over the cap (the connection is closed then, unread)."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes | None


# 1xx answers (100 Continue, 103 Early Hints) read before an answer: a server sends one or two.
MAX_INTERIM_ANSWERS = 10
# Chunk framing an answer may carry per byte of its body, on top of twice the head's limit.
FRAMING_BYTES_PER_BODY_BYTE = 8


class AnswerLimits(NamedTuple):
    """What one answer may take: body bytes, bytes outside a body (the head, chunk framing,
    trailers) and header fields (trailers count as fields too)."""

    max_body_bytes: int
    max_header_bytes: int
    max_headers: int


class Origin(NamedTuple):
    """Where requests go: a scheme, a host (a name or an IP literal) and a port."""

    scheme: str
    host: str
    port: int


class ConnectFailed(Exception):
    """No connection could be opened; the cause says why (DNS, refused, TLS...)."""


class ConnectionBroken(Exception):
    """The connection closed, or the answer was not HTTP/1.1, before the answer was whole."""


class HeadersTooLarge(Exception):
    """The answer's head (or its trailers) went past a limit: `limit` "bytes", "fields",
    "interim answers" or "framing" (bytes besides the body's)."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"the answer's head is over {limit} {what}")
        self.what = what
        self.limit = limit


class AgentConnection(asyncio.Protocol):
    """A connection that carries one exchange at a time; `exchange` sends and awaits."""

    def __init__(self, limits: AnswerLimits) -> None:
        self._limits = limits
        self._max_body_bytes = limits.max_body_bytes
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._answer: asyncio.Future[Answer] | None = None
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._size = 0
        # Bytes fed since the head began or the body last moved (the head, chunk framing,
        # trailers), and a count of the parser's events that mean it moved.
        self._outside_body_bytes = 0
        self._progress = 0
        self._interim_answers = 0
        self._fed_bytes = 0  # every byte of this answer fed to the parser
        self._keep_alive = False
        self._headers_done = False
        self.closed = False
        self.idle_since = time.monotonic()

    def reusable(self, keepalive_s: float) -> bool:
        """Whether the next exchange may go over this connection."""
        return not self.closed and time.monotonic() - self.idle_since < keepalive_s

    async def exchange(self, request: bytes) -> Answer:
        """Send a whole request and wait for the whole answer."""
        if self.closed or self._transport is None:
            raise ConnectionBroken("the connection is closed")
        self._answer = asyncio.get_running_loop().create_future()
        self._headers, self._body, self._size = [], [], 0
        self._outside_body_bytes = self._interim_answers = self._fed_bytes = 0
        self._headers_done = False
        self._transport.write(request)
        try:
            answer = await self._answer
        except BaseException:
            self.close()  # a timeout or an error mid-answer: the stream's state is unknown
            raise
        finally:
            self._answer = None
        if not self._keep_alive or answer.body is None:
            self.close()
        self.idle_since = time.monotonic()
        return answer

    def close(self) -> None:
        """Close now, whatever is in flight."""
        self.closed = True
        if self._transport is not None:
            self._transport.close()

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        if self._answer is None or self._answer.done():
            self.close()  # bytes nobody asked for: the connection cannot be trusted again
            return
        try:
            self._feed(data)
        except httptools.HttpParserError as exc:
            refused = exc.__context__  # raised by on_header, past the count of fields
            if isinstance(refused, HeadersTooLarge):
                self._fail(refused)
            else:
                self._fail(ConnectionBroken(f"the answer is not valid HTTP/1.1 ({exc})"))

    def _feed(self, data: bytes) -> None:
        """Feed the parser no more than the byte limit outside a body at a time, and nothing
        once that many have gone by without the head ending or the body moving on."""
        while data:
            if self._answer_settled():
                self._keep_alive = False  # bytes past the answer: the stream is not in step
                return
            room = self._limits.max_header_bytes - self._outside_body_bytes
            if room <= 0:
                self._fail(HeadersTooLarge("bytes", self._limits.max_header_bytes))
                return
            if self._fed_bytes - self._size > self._framing_allowance():
                self._fail(HeadersTooLarge("framing", self._framing_allowance()))
                return
            piece, data = data[:room], data[room:]
            progress = self._progress
            self._fed_bytes += len(piece)
            self._parser.feed_data(piece)
            # A piece is at most `room` long, so what follows the last event in it (not
            # counted) is bounded by the limit too.
            moved = self._progress != progress
            self._outside_body_bytes = 0 if moved else self._outside_body_bytes + len(piece)

    def _framing_allowance(self) -> int:
        """Bytes an answer may hold besides its body's: its head and trailers, and chunk
        framing in proportion to the body (a byte a chunk takes 5), whatever each byte reset."""
        return 2 * self._limits.max_header_bytes + FRAMING_BYTES_PER_BODY_BYTE * self._size

    def _answer_settled(self) -> bool:
        return self._answer is None or self._answer.done()

    def eof_received(self) -> bool | None:
        self.closed = True
        return None  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if exc is None and self._ends_at_close():
            self._keep_alive = False
            self._finish(body=b"".join(self._body))  # an HTTP/1.0-style body: it ends here
            return
        broken = ConnectionBroken("the agent closed the connection before answering whole")
        if exc is not None:
            broken.__cause__ = exc
        self._fail(broken)

    # httptools' parser callbacks

    def on_message_begin(self) -> None:
        if self._answer_settled():
            self._keep_alive = False  # bytes past the answer: the stream is out of step

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(self._headers) >= self._limits.max_headers:
            raise HeadersTooLarge("fields", self._limits.max_headers)  # stops the parser
        self._headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        self._headers_done = True
        self._progress += 1
        declared = dict(self._headers).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self._max_body_bytes:
            self._finish(body=None)

    def on_body(self, chunk: bytes) -> None:
        self._progress += 1
        self._size += len(chunk)
        if self._size > self._max_body_bytes:
            self._finish(body=None)
        else:
            self._body.append(chunk)

    def on_message_complete(self) -> None:
        status = self._parser.get_status_code()
        if status < 200:  # 100 Continue and the like: the answer follows
            # Each such head is bounded, their number too: endless ones never end the exchange.
            self._interim_answers += 1
            if self._interim_answers > MAX_INTERIM_ANSWERS:
                raise HeadersTooLarge("interim answers", MAX_INTERIM_ANSWERS)
            self._headers, self._body, self._size = [], [], 0
            self._headers_done = False
            return
        self._keep_alive = self._parser.should_keep_alive()
        self._finish(body=b"".join(self._body))

    def _ends_at_close(self) -> bool:
        """Whether the answer's body is framed by the connection closing (no length given)."""
        names = {name for name, _ in self._headers}
        return self._headers_done and not names & {b"content-length", b"transfer-encoding"}

    def _finish(self, body: bytes | None) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(Answer(self._parser.get_status_code(), self._headers, body))

    def _fail(self, exc: Exception) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(exc)
        self.close()
