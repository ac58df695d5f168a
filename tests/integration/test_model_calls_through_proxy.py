"""The model's requests go through the proxy the environment names (the SDK's own client), and
straight to the model on the platform's pooled connections when none is named or NO_PROXY
names its host; both against real servers on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentlasso.judge.model_calls import JudgeSettings, ModelCaller, Reply

MESSAGE = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
    "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn",
    "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1},
}  # fmt: skip
PARAMS = {"model": "claude-test", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


class Recorder(ThreadingHTTPServer):
    """Answers every POST with a message, and records its request line's target."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.targets: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Recorder
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.targets.append(self.path)
        payload = json.dumps(MESSAGE).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


async def asked(base_url: str) -> Reply | Any:
    caller = ModelCaller(JudgeSettings(api_key="sk-test", model="claude-test", base_url=base_url))
    try:
        return await caller.call(PARAMS, None)
    finally:
        await caller.aclose()


async def test_a_proxy_named_by_the_environment_carries_the_models_requests(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", recorder.url)
    # A name only the proxy can reach: going straight there would fail to resolve.
    reply = await asked("http://model.invalid")
    assert isinstance(reply, Reply), reply
    assert reply.output.text == "hello"
    assert recorder.targets == ["http://model.invalid/v1/messages"]  # the proxy's absolute form


@pytest.mark.parametrize("no_proxy", [None, "127.0.0.1"])
async def test_without_a_proxy_for_its_address_the_model_is_called_straight(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch, no_proxy: str | None
) -> None:
    if no_proxy is not None:
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
        monkeypatch.setenv("NO_PROXY", no_proxy)
    reply = await asked(recorder.url)
    assert isinstance(reply, Reply), reply
    assert recorder.targets == ["/v1/messages"]
