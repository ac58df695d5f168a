"""A fake agent scripted per input: a real HTTP server on 127.0.0.1 that answers each input with
its scripted reply and tool calls (with arguments), after the delay scripted for it."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Scripted:
    """What the agent answers to one input, and how long it takes first."""

    output: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0


class ToolAgent(ThreadingHTTPServer):
    """Answers each input with `replies[input]`; an input it was not scripted for is a 500."""

    daemon_threads = True

    def __init__(self, replies: dict[str, Scripted]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/agent"

    def answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body for one request, after its scripted delay."""
        with self._lock:
            self.requests.append(request)
        scripted = self.replies.get(str(request.get("input")))
        if scripted is None:
            return 500, {"error": f"not scripted: {request.get('input')!r}"}
        time.sleep(scripted.delay_s)
        return 200, {"output": scripted.output, "tool_calls": scripted.tool_calls}


class _Handler(BaseHTTPRequestHandler):
    server: ToolAgent

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        status, body = self.server.answer(json.loads(self.rfile.read(length) or b"{}"))
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the recorded requests instead."""


@contextlib.contextmanager
def running_tool_agent(replies: dict[str, Scripted]) -> Iterator[ToolAgent]:
    """The scripted agent serving in a background thread."""
    server = ToolAgent(replies)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
