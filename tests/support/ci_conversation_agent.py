"""A conversational agent under test, keeping its state by `conversation_id` (contract section
13), with a bug at turn 3; and a stand-in for the platform's simulated user: a proxy to the real
API that answers POST /api/v1/eval-runs/{id}/next-user-turn itself."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

ORDER = re.compile(r"\b[A-Z]-\d+\b")


def agent_answer(state: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """A refund desk: asks for the order number, looks it up, refunds it when told yes. The
    bug: at turn 3 it refunds an order starting with B without calling stripe.refund."""
    text = str(request["input"])
    if "bye" in text.lower():
        return {"output": "Goodbye!", "tool_calls": [], "end": True}
    if text.lower().startswith("yes"):
        order = state.get("order")  # remembered by conversation_id, not read from messages
        if order is None:
            return {"output": "Which order?", "tool_calls": []}
        if request["turn"] == 3 and order.startswith("B"):
            return {"output": f"Refunded {order}.", "tool_calls": []}
        calls = [{"name": "stripe.refund", "arguments": {"order": order}}]
        return {"output": f"Refunded {order}: 3-5 business days.", "tool_calls": calls}
    if (found := ORDER.search(text)) is not None:
        state["order"] = found.group()
        calls = [{"name": "orders.lookup", "arguments": {"order": found.group()}}]
        return {"output": f"Found {found.group()}. Shall I refund it?", "tool_calls": calls}
    return {"output": "Sure: what is your order number?", "tool_calls": []}


def _read_json(handler: BaseHTTPRequestHandler) -> Any:
    length = int(handler.headers.get("content-length") or 0)
    return json.loads(handler.rfile.read(length) or b"{}")


def _answer(
    handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str,
    headers: dict[str, str] | None = None,
) -> None:  # fmt: skip
    handler.send_response(status)
    handler.send_header("content-type", kind)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class _AgentHandler(BaseHTTPRequestHandler):
    server: ConversationAgent
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        request = _read_json(self)
        answer = self.server.answer(request, self.headers.get("traceparent"))
        _answer(self, 200, json.dumps(answer).encode(), "application/json")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the recorded requests instead."""


class ConversationAgent(ThreadingHTTPServer):
    """Records every request; keeps each conversation's state by its conversation_id."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _AgentHandler)
        self.requests: list[dict[str, Any]] = []
        # Each request's traceparent header (None when it had none), in the requests' order.
        self.traceparents: list[str | None] = []
        self.states: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/agent"

    def answer(self, request: dict[str, Any], traceparent: str | None) -> dict[str, Any]:
        """Record the request and answer it from its conversation's state."""
        with self._lock:
            self.requests.append(request)
            self.traceparents.append(traceparent)
            state = self.states.setdefault(request["conversation_id"], {})
            return agent_answer(state, request)


def simulated_user(transcript: list[dict[str, Any]]) -> dict[str, Any]:
    """The customer after a refund of A-17: answers the agent's last question, done once the
    agent says it refunded."""
    last = transcript[-1]["content"] if transcript else ""
    if "Refunded" in str(last):
        return {"user": None, "done": True, "reason": "The refund is done."}
    if "order number" in str(last):
        return {"user": "It is A-17", "done": False, "reason": "Gives the order number."}
    return {"user": "Yes, refund it", "done": False, "reason": "Confirms the refund."}


class _PlatformHandler(BaseHTTPRequestHandler):
    server: FakeUserPlatform
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._forward("GET", None)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        if self.path.endswith("/next-user-turn"):
            asked = json.loads(body)
            self.server.asked.append(asked)
            self.server.asked_at.append(time.monotonic())
            if self.server.refusals:
                status, retry_after = self.server.refusals.pop(0)
                problem = b'{"detail": "try again later"}'
                headers = {"retry-after": retry_after}
                _answer(self, status, problem, "application/problem+json", headers)
                return
            if self.server.failing:
                _answer(self, 503, b'{"detail": "the model is unavailable"}', "application/json")
                return
            answer = json.dumps(simulated_user(asked["transcript"])).encode()
            _answer(self, 200, answer, "application/json")
            return
        self._forward("POST", body)

    def _forward(self, method: str, body: bytes | None) -> None:
        headers = {
            name: value
            for name, value in self.headers.items()
            if name.lower() in ("x-api-key", "content-type", "idempotency-key")
        }
        response = self.server.upstream.request(method, self.path, content=body, headers=headers)
        kind = response.headers.get("content-type", "application/json")
        _answer(self, response.status_code, response.content, kind)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class FakeUserPlatform(ThreadingHTTPServer):
    """The real API behind it, but for the simulated user, which it plays itself."""

    daemon_threads = True

    def __init__(self, api_url: str) -> None:
        super().__init__(("127.0.0.1", 0), _PlatformHandler)
        self.upstream = httpx.Client(base_url=api_url, timeout=60)
        self.asked: list[dict[str, Any]] = []
        self.asked_at: list[float] = []
        # Answer every ask with a 503, as a platform whose model cannot be reached.
        self.failing = False
        # The next asks' answers before any is played: (status, its Retry-After), in order,
        # as the platform's quota (429) or its model's outage (503) answer.
        self.refusals: list[tuple[int, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextlib.contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[None]:
    """Serve in a background thread until the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def running_conversation_agent() -> Iterator[ConversationAgent]:
    """The conversational agent on 127.0.0.1."""
    server = ConversationAgent()
    with serving(server):
        yield server


@contextlib.contextmanager
def running_fake_user_platform(api_url: str) -> Iterator[FakeUserPlatform]:
    """The proxy playing the simulated user, in front of the API at api_url."""
    server = FakeUserPlatform(api_url)
    with serving(server):
        yield server
    server.upstream.close()
