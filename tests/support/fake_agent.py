"""A fake agent under test: a real HTTP server on 127.0.0.1 whose answer depends on the input."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REFUND_REPLY = {
    "output": "I have refunded order 1234. The money arrives in 3-5 business days.",
    "tool_calls": [
        {"name": "orders.lookup", "arguments": '{"order": 1234}'},
        {"type": "tool_use", "name": "stripe.refund", "input": {"amount": 20}},
    ],
}
PROMISE_REPLY = {"output": "Refund coming, I guarantee it!", "tool_calls": []}
# PostgreSQL cannot hold U+0000 in text or jsonb; an agent may well send it.
NUL_REPLY = {
    "output": "Refund sent\u0000: 3-5 business days.",
    "tool_calls": [{"name": "stripe.refund", "arguments": {"note\u0000": "\u0000"}}],
}


class Answer:
    """A status, a body (bytes) and extra headers."""

    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.headers = headers or {}


def reply_for(server: FakeAgentServer, request: dict[str, Any]) -> Answer:
    """What the agent answers, chosen by words in the input (see each branch)."""
    text = json.dumps(request.get("input", ""))
    # Per case and trial: how many times this exact call was made before (for flaky answers).
    key = f"{request.get('test_case_id')}:{request.get('trial')}:{request.get('run_id')}"
    seen = server.count(key)
    if "crash" in text:
        return Answer(500, {"error": "boom"})
    if "flaky" in text and seen < 2:
        return Answer(503, {"error": "try again"})
    if "ratelimit" in text and seen < 1:
        return Answer(429, {"error": "slow down"}, {"retry-after": "1"})
    if "redirect" in text:
        return Answer(302, b"", {"location": "http://127.0.0.1:9/elsewhere"})
    if "huge" in text:
        return Answer(200, b'{"output": "' + b"x" * (5 * 1024 * 1024) + b'"}')
    if "garbage" in text:
        return Answer(200, b"<html>not json")
    if "slow" in text:
        time.sleep(5)
    if "nul reply" in text:
        return Answer(200, NUL_REPLY)
    if "promise" in text:
        return Answer(200, PROMISE_REPLY)
    if "silent" in text or "notools" in text:
        return Answer(200, {"output": "Your refund is on its way: 3-5 business days."})
    return Answer(200, REFUND_REPLY)


class _Handler(BaseHTTPRequestHandler):
    server: FakeAgentServer

    protocol_version = "HTTP/1.1"  # keep-alive, as real agents serve

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        self.server.record(request, dict(self.headers))
        with self.server.in_flight():
            if self.server.delay_s:
                time.sleep(self.server.delay_s)
            answer = reply_for(self.server, request)
        self.send_response(answer.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer.payload)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        # The caller may give up first (a body over its limit): nothing to do then.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(answer.payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the recorded requests instead."""


class FakeAgentServer(ThreadingHTTPServer):
    """Records every request it receives."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.arrivals: list[tuple[float, dict[str, Any]]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.delay_s = 0.0
        self._counts: dict[str, int] = {}
        self.calls_in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()

    def record(self, request: dict[str, Any], headers: dict[str, str]) -> None:
        """Keep the request, when it came, and its headers."""
        with self._lock:
            self.requests.append(request)
            self.arrivals.append((time.monotonic(), request))
            self.headers_seen.append(headers)

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        """Count this call as in flight while the block runs; `most_in_flight` keeps the peak."""
        with self._lock:
            self.calls_in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.calls_in_flight)
        try:
            yield
        finally:
            with self._lock:
                self.calls_in_flight -= 1

    def count(self, key: str) -> int:
        """How many times `key` was counted before; counts this one."""
        with self._lock:
            seen = self._counts.get(key, 0)
            self._counts[key] = seen + 1
            return seen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/agent"


@contextlib.contextmanager
def running_fake_agent() -> Iterator[FakeAgentServer]:
    """A fake agent serving in a background thread."""
    server = FakeAgentServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
