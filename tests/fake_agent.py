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


def reply_for(request: dict[str, Any]) -> tuple[int, Any]:
    """The status and JSON body the agent answers with, chosen by words in the input."""
    text = json.dumps(request.get("input", ""))
    if "crash" in text:
        return 500, {"error": "boom"}
    if "slow" in text:
        time.sleep(5)
    if "promise" in text:
        return 200, PROMISE_REPLY
    if "silent" in text:
        return 200, {"tool_calls": []}
    return 200, REFUND_REPLY


class _Handler(BaseHTTPRequestHandler):
    server: FakeAgentServer

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append(request)
        status, body = reply_for(request)
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the recorded requests instead."""


class FakeAgentServer(ThreadingHTTPServer):
    """Records every request it receives."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []

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
