"""A conversational fake agent: a real HTTP server on 127.0.0.1 that keeps each conversation's
state by `conversation_id`, as a support bot for orders would (contract section 13).

What it answers, by words in the turn's input:
- an order number (4 digits): it looks the order up (`orders.lookup`) and remembers it;
- `refund`: it refunds the order it remembers (`stripe.refund`);
- `order number`: it says the order number it remembers;
- `bye`: it says goodbye and ends the conversation (`"end": true`).

Switchable bugs: `forget_at_turn_3` (it forgets the order number at turn 3),
`refund_before_lookup` (it promises a refund before looking the order up) and `never_end`
(it never answers `end`). Every request is logged with its conversation id and turn, and every
reply ends `#<conversation_id>`.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ORDER = re.compile(r"\b(\d{4})\b")


class Conversation:
    """What the agent remembers of one conversation, and what it answered so far."""

    def __init__(self) -> None:
        self.order: str | None = None
        self.history: list[dict[str, Any]] = []


class ConversationalAgent(ThreadingHTTPServer):
    """Keeps state per conversation_id; logs every request."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.forget_at_turn_3 = False
        self.refund_before_lookup = False
        self.never_end = False
        self.delay_s = 0.0
        self.requests: list[dict[str, Any]] = []
        # Requests whose `messages` differ from what this agent was told and answered before.
        self.history_mismatches: list[dict[str, Any]] = []
        self.conversations: dict[str, Conversation] = {}
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/agent"

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to one turn, remembering what it needs for the next."""
        conversation_id = str(request.get("conversation_id"))
        with self._lock:
            self.requests.append(request)
            state = self.conversations.setdefault(conversation_id, Conversation())
            if request.get("messages") != state.history:
                self.history_mismatches.append(request)
        reply = self._reply(state, int(request.get("turn") or 0), str(request.get("input")))
        # Signed with the conversation id: a stored turn shows which conversation answered it.
        reply["output"] += f" #{conversation_id}"
        with self._lock:
            state.history.append({"role": "user", "content": request.get("input")})
            message = {"role": "assistant", "content": reply["output"]}
            if reply["tool_calls"]:
                message["tool_calls"] = reply["tool_calls"]
            state.history.append(message)
        return reply

    def _reply(self, state: Conversation, turn: int, text: str) -> dict[str, Any]:
        if self.forget_at_turn_3 and turn == 3:
            state.order = None
        outputs: list[str] = []
        calls: list[dict[str, Any]] = []
        found = _ORDER.search(text)
        if "refund" in text.lower() and self.refund_before_lookup:
            outputs.append("Refund coming, I guarantee it!")
        if found:
            state.order = found.group(1)
            calls.append({"name": "orders.lookup", "arguments": {"order": state.order}})
            outputs.append(f"I found order {state.order}: it is delayed.")
        if "refund" in text.lower() and not self.refund_before_lookup:
            if state.order is None:
                outputs.append("Which order should I refund?")
            else:
                calls.append({"name": "stripe.refund", "arguments": {"order": state.order}})
                outputs.append(f"I have refunded order {state.order}: 3-5 business days.")
        if "order number" in text.lower():
            known = state.order or "something I do not know, sorry"
            outputs.append(f"Your order number is {known}.")
        ends = "bye" in text.lower() and not self.never_end
        if ends:
            outputs.append("Goodbye!")
        reply: dict[str, Any] = {"output": " ".join(outputs) or "How can I help?"}
        reply["tool_calls"] = calls
        if ends:
            reply["end"] = True
        return reply

    def turns_of(self, conversation_id: str) -> list[int]:
        """The turns this agent was asked under one conversation id, in arrival order."""
        with self._lock:
            return [
                int(r["turn"]) for r in self.requests if r.get("conversation_id") == conversation_id
            ]


class _Handler(BaseHTTPRequestHandler):
    server: ConversationalAgent

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if self.server.delay_s:
            time.sleep(self.server.delay_s)
        payload = json.dumps(self.server.answer(request)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the logged requests instead."""


@contextlib.contextmanager
def running_conversational_agent() -> Iterator[ConversationalAgent]:
    """A conversational agent serving in a background thread."""
    server = ConversationalAgent()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
