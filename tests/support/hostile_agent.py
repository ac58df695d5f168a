"""An agent an attacker registers, whose answers attack the client's header parsing:
`python -m tests.support.hostile_agent [FLOOD_MB]` prints its port on its first line.

By path: `/header-bytes` sends FLOOD_MB (1,024 unless given) of headers, 8 KiB each,
`/header-count` 100,000 small headers, `/huge-header` one header whose value is 32 MB,
`/slow-headers` one header byte every half second. Each then ends its headers and sends a
small JSON body, if the client still listens. Every answer is bounded (bytes or time), so
the server stops by itself; it runs in its own process in the benchmarks, so its CPU is not
counted as the platform's.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable

BODY = b'{"output": "I have refunded order 1234."}'
_HEADER_FILLER = b"x" * (8 * 1024 - 32)
_HUGE_VALUE = b"v" * (32 * 1024 * 1024)
FLOOD_MB = 1024
FLOOD_HEADERS = 100_000
SLOW_HEADER_S = 0.5
SLOW_FOR_S = 60.0

Writer = asyncio.StreamWriter


async def header_bytes(writer: Writer) -> None:
    """FLOOD_MB of 8 KiB headers."""
    sent = 0
    number = 0
    while sent < FLOOD_MB * 1024 * 1024 and not writer.is_closing():
        line = b"x-flood-%d: %s\r\n" % (number, _HEADER_FILLER)
        writer.write(line)
        sent += len(line)
        number += 1
        if number % 64 == 0:
            await writer.drain()


async def header_count(writer: Writer) -> None:
    """100,000 headers of a few bytes each."""
    for start in range(0, FLOOD_HEADERS, 1_000):
        if writer.is_closing():
            return
        writer.write(b"".join(b"x-%d: v\r\n" % n for n in range(start, start + 1_000)))
        await writer.drain()


async def huge_header(writer: Writer) -> None:
    """One header whose value is 32 MB."""
    writer.write(b"x-huge: " + _HUGE_VALUE + b"\r\n")
    await writer.drain()


async def slow_headers(writer: Writer) -> None:
    """One header byte every half second, for a minute at most."""
    writer.write(b"x-slow: ")
    for _ in range(int(SLOW_FOR_S / SLOW_HEADER_S)):
        if writer.is_closing():
            return
        writer.write(b"s")
        await writer.drain()
        await asyncio.sleep(SLOW_HEADER_S)
    writer.write(b"\r\n")


ANSWERS: dict[str, Callable[[Writer], Awaitable[None]]] = {
    "/header-bytes": header_bytes,
    "/header-count": header_count,
    "/huge-header": huge_header,
    "/slow-headers": slow_headers,
}


async def serve(reader: asyncio.StreamReader, writer: Writer) -> None:
    """Answer each request on the connection with the attack its path names."""
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        while not writer.is_closing():
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode(errors="replace")
            await _read_body(reader, head)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
            await ANSWERS.get(path, header_count)(writer)
            writer.write(b"content-length: %d\r\n\r\n%s" % (len(BODY), BODY))
            await writer.drain()
    writer.close()


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> None:
    for line in head.lower().split(b"\r\n"):
        if line.startswith(b"content-length:"):
            await reader.readexactly(int(line.split(b":", 1)[1]))


async def main() -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        FLOOD_MB = int(sys.argv[1])
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    sys.exit(0)
