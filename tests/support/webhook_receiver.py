"""A webhook receiver on 127.0.0.1 for alerts: it checks each post's X-AgentLasso-Signature
against the shared secret as a receiver should (HMAC-SHA256 of the raw body, compared in
constant time), keeps what it was sent, and can be told to fail its first posts."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SECRET = "receiver-shared-secret-7f3a"


@dataclass(frozen=True)
class Post:
    """One post as received: its headers, its body, and whether its signature held."""

    headers: dict[str, str]
    body: bytes
    signed: bool

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class WebhookReceiver(ThreadingHTTPServer):
    """Records every post; answers 500 to the first `failures` of them, then 204."""

    def __init__(self, secret: str, failures: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.secret = secret.encode()
        self.failures = failures
        self.posts: list[Post] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hooks/agentlasso"

    def accepted(self) -> list[Post]:
        """The posts answered 2xx, in order."""
        with self.lock:
            return self.posts[self.failures :]


class _Handler(BaseHTTPRequestHandler):
    server: WebhookReceiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        expected = "sha256=" + hmac.new(self.server.secret, body, hashlib.sha256).hexdigest()
        given = self.headers.get("x-agentlasso-signature") or ""
        with self.server.lock:
            self.server.posts.append(
                Post(dict(self.headers.items()), body, hmac.compare_digest(expected, given))
            )
            failing = len(self.server.posts) <= self.server.failures
        self.send_response(500 if failing else 204)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the posts."""


@contextmanager
def running_receiver(secret: str = SECRET, failures: int = 0) -> Iterator[WebhookReceiver]:
    """A receiver serving from a thread of its own for the block."""
    receiver = WebhookReceiver(secret, failures)
    thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.shutdown()
        receiver.server_close()
