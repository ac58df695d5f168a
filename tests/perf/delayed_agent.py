"""A fast fake agent that answers after a fixed delay: `python -m tests.perf.delayed_agent MS`.

With a second argument N its reply is N bytes of "ab" (a hostile pattern's favourite text).

HTTP/1.1 with keep-alive on asyncio's raw protocol, so thousands of calls a second cost it
little; it prints its port on its first line. It runs in its own process in the benchmarks, so
its CPU is not counted as the platform's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

REPLY = json.dumps(
    {
        "output": "I have refunded order 1234. The money arrives in 3-5 business days.",
        "tool_calls": [
            {"name": "orders.lookup", "arguments": {"order": 1234}},
            {"name": "stripe.refund", "arguments": '{"amount": 20}'},
        ],
    }
).encode()


def response_with(reply: bytes) -> bytes:
    """The whole HTTP answer carrying this JSON body."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
    return head + str(len(reply)).encode() + b"\r\n\r\n" + reply


RESPONSE = response_with(REPLY)


class DelayedAgent(asyncio.Protocol):
    """Answers each complete request after the delay."""

    delay_s = 0.0
    response = RESPONSE

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            length = content_length(self.buffer[:end])
            if len(self.buffer) < end + 4 + length:
                return
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 + length :]
            self.received(head)

    def received(self, head: bytes) -> None:
        """A whole request came (its head given): answer it after the delay."""
        asyncio.get_running_loop().call_later(self.delay_s, self.answer)

    def answer(self) -> None:
        if not self.transport.is_closing():
            self.transport.write(self.response)


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


async def serve(delay_ms: float, reply_bytes: int = 0) -> None:
    DelayedAgent.delay_s = delay_ms / 1000
    if reply_bytes:
        output = "ab" * (reply_bytes // 2)
        DelayedAgent.response = response_with(
            json.dumps({"output": output, "tool_calls": []}).encode()
        )
    await serve_with(DelayedAgent)


async def serve_with(protocol: type[DelayedAgent]) -> None:
    """Serve the protocol on a free loopback port, printed first, until stopped."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(protocol, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        delay = float(sys.argv[1]) if len(sys.argv) > 1 else 0
        asyncio.run(serve(delay, int(sys.argv[2]) if len(sys.argv) > 2 else 0))
