"""Fake agents for the agent client's tests: real HTTP/1.1 servers on 127.0.0.1, scripted.

`ScriptedAgent` runs in the test's event loop and answers each request with the next of its
handlers (the last one repeats), so a test can say "503, 503, then a reply". `serve_fast_agent`
is the benchmark's agent: a bare asyncio protocol meant to run in a process of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gzip
import json
import ssl
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Writer = asyncio.StreamWriter


@dataclass(frozen=True)
class AgentRequest:
    """One request as the fake agent received it; header names lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Handler = Callable[[AgentRequest, Writer], Awaitable[None]]


@dataclass
class ScriptedAgent:
    """A fake agent answering request N with handler N (the last handler for every later one)."""

    handlers: tuple[Handler, ...]
    ssl_context: ssl.SSLContext | None = None
    requests: list[AgentRequest] = field(default_factory=list)
    connections: int = 0
    open_connections: int = 0
    sni_names: list[str | None] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.port}/agent"

    async def start(self) -> ScriptedAgent:
        if self.ssl_context is not None:
            self.ssl_context.sni_callback = self._record_sni
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        return self

    async def close(self) -> None:
        """Stop listening and end every connection, hanging handlers included."""
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _record_sni(self, _socket: Any, server_name: str | None, _context: Any) -> None:
        self.sni_names.append(server_name)

    async def _serve(self, reader: asyncio.StreamReader, writer: Writer) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        self.open_connections += 1
        try:
            while (request := await read_request(reader)) is not None:
                self.requests.append(request)
                handler = self.handlers[min(len(self.requests), len(self.handlers)) - 1]
                await handler(request, writer)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError, ssl.SSLError):
            pass
        finally:
            self._tasks.discard(task)
            self.open_connections -= 1
            writer.close()


async def read_request(reader: asyncio.StreamReader) -> AgentRequest | None:
    """The next request on a keep-alive connection, or None when the client hung up."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, path, _version = request_line.split(" ", 2)
    headers = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return AgentRequest(method, path, headers, body)


def response_head(status: int, headers: dict[str, str]) -> bytes:
    """A status line and headers, ready to write."""
    lines = [f"HTTP/1.1 {status} Whatever"] + [
        f"{name}: {value}" for name, value in headers.items()
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def raw_answer(status: int, body: bytes, headers: dict[str, str] | None = None) -> Handler:
    """Answer with these bytes (and a Content-Length), keeping the connection open."""

    async def handle(_request: AgentRequest, writer: Writer) -> None:
        all_headers = {"content-type": "application/json", "content-length": str(len(body))}
        writer.write(response_head(status, {**all_headers, **(headers or {})}) + body)

    return handle


def json_answer(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Handler:
    """Answer with this value as JSON."""
    return raw_answer(status, json.dumps(value).encode(), headers)


def echo_answer() -> Handler:
    """Answer with the request it received: its headers, and its body as the output."""

    async def handle(request: AgentRequest, writer: Writer) -> None:
        body = json.dumps({"output": request.json(), "headers": request.headers}).encode()
        await raw_answer(200, body)(request, writer)

    return handle


def hang() -> Handler:
    """Read the request, never answer."""

    async def handle(_request: AgentRequest, _writer: Writer) -> None:
        await asyncio.sleep(3600)

    return handle


def drip(byte_every_s: float, total_bytes: int = 1000) -> Handler:
    """Answer at once, then send the body one byte at a time (a per-read timeout never fires)."""

    async def handle(_request: AgentRequest, writer: Writer) -> None:
        writer.write(response_head(200, {"content-length": str(total_bytes)}))
        for _ in range(total_bytes):
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(byte_every_s)

    return handle


def chunked_answer(total_bytes: int, chunk_bytes: int = 64 * 1024) -> Handler:
    """A body of spaces with no Content-Length, sent in chunks (only streaming can cap it)."""

    async def handle(_request: AgentRequest, writer: Writer) -> None:
        writer.write(response_head(200, {"transfer-encoding": "chunked"}))
        sent = 0
        while sent < total_bytes:
            size = min(chunk_bytes, total_bytes - sent)
            writer.write(b"%x\r\n" % size + b" " * size + b"\r\n")
            await writer.drain()
            sent += size
        writer.write(b"0\r\n\r\n")

    return handle


def gzip_bomb_answer(inflated_bytes: int = 50 * 1024 * 1024) -> Handler:
    """A small gzip body that inflates to many MB of JSON-ish text, sent although not asked for."""
    payload = b'{"output": "' + b"A" * inflated_bytes + b'"}'
    compressed = gzip.compress(payload, compresslevel=9)
    return raw_answer(200, compressed, {"content-encoding": "gzip"})


def self_signed_tls(host: str, directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server TLS context for `host` and the path of its certificate (for clients to trust)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "agent.pem", directory / "agent.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context, cert_path


# The benchmark's agent: the same answer to every request, as fast as asyncio allows.
FAST_REPLY = json.dumps(
    {
        "output": "I have refunded order 1234.",
        "tool_calls": [{"name": "orders.refund", "arguments": {"order": 1234}}],
    }
).encode()
_FAST_RESPONSE = (
    response_head(200, {"content-type": "application/json", "content-length": str(len(FAST_REPLY))})
    + FAST_REPLY
)


class _FastAgentProtocol(asyncio.Protocol):
    """Answers each complete request (head plus Content-Length body) with the fixed reply."""

    def __init__(self) -> None:
        self._buffer = b""
        self._transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # uvloop's transports are not asyncio.Transport subclasses

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            length = _content_length(self._buffer[:end])
            if len(self._buffer) < end + 4 + length:
                return
            self._buffer = self._buffer[end + 4 + length :]
            self._transport.write(_FAST_RESPONSE)


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


async def serve_fast_agent(port: int = 0) -> None:
    """Serve the fast agent on 127.0.0.1 until killed, printing the port first."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_FastAgentProtocol, "127.0.0.1", port, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":  # python -m tests.support.agent_servers [port]: the benchmark's agent
    with contextlib.suppress(KeyboardInterrupt):
        try:
            import uvloop

            uvloop.run(serve_fast_agent(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
        except ImportError:
            asyncio.run(serve_fast_agent(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
