"""A real A2A server nobody here wrote: an agent built with the A2A Python SDK (PyPI `a2a-sdk`),
served by the SDK's own Starlette routes under uvicorn on 127.0.0.1.

What it does is chosen by the first word of the user's message:
- `task ...`: a task that completes at once, its reply an artifact;
- `slow ...`: a task that works for a while (`SLOW_S`) before it completes. Its request is
  answered at once, as a server that does not wait would answer (see `_AnswerAtOnce`), so
  the client has to follow it with `tasks/get`;
- `never ...`: a task that never completes (answered at once too);
- `tools ...`: a message reporting two tool calls as a data part;
- `fixtures ...`: a message echoing the tool fixtures the request's metadata carried;
- `fail ...`: a task that fails, saying why;
- anything else: a message counting the user messages seen in this context, and echoing
  the one before (so a conversation's turns must share one contextId).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import (
    new_data_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Role
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

SLOW_S = 1.0
TOOL_CALLS = [
    {"name": "orders.lookup", "arguments": {"order": 1234}},
    {"name": "stripe.refund", "arguments": {"amount": 20}},
]
SKILLS = [
    AgentSkill(
        id="refunds",
        name="Refunds",
        description="Looks an order up and refunds it when the policy allows.",
        tags=["billing"],
        examples=["Refund order 1234"],
    )
]


class ScriptedExecutor(AgentExecutor):
    """The agent's logic, chosen by the message's first word; remembers each context's turns."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = defaultdict(list)
        self.metadata: list[dict[str, Any]] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        self.metadata.append(_message_metadata(context))
        context_id = context.context_id or ""
        word = text.split(" ", 1)[0]
        if word in ("task", "slow", "never", "fail"):
            await self._task(word, text, context, event_queue)
            return
        reply = self._reply(word, text, context)
        message = new_text_message(reply, context_id=context_id, role=Role.ROLE_AGENT)
        if word == "tools":
            message.parts.append(new_data_part({"tool_calls": TOOL_CALLS}))
        await event_queue.enqueue_event(message)

    def _reply(self, word: str, text: str, context: RequestContext) -> str:
        if word == "fixtures":
            return json.dumps(_message_metadata(context).get("tool_fixtures"), sort_keys=True)
        seen = self.seen[context.context_id or ""]
        before = seen[-1] if seen else None
        seen.append(text)
        return f"message {len(seen)} of this context; before it: {before}"

    async def _task(
        self, word: str, text: str, context: RequestContext, event_queue: EventQueue
    ) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if word == "never":
            await asyncio.Event().wait()
        if word == "slow":
            await asyncio.sleep(SLOW_S)
        if word == "fail":
            await updater.failed(
                new_text_message("the refund service is down", role=Role.ROLE_AGENT)
            )
            return
        await updater.add_artifact([new_text_part(f"done: {text}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def _message_metadata(context: RequestContext) -> dict[str, Any]:
    """The metadata the user's message carried (where the platform puts tool fixtures)."""
    if context.message is None or not context.message.HasField("metadata"):
        return {}
    return json_format.MessageToDict(context.message.metadata)


class _AnswerAtOnce:
    """Turns `blocking` off for `slow` and `never` messages: the SDK then answers with the task
    as it stands (working), the way a server that never waits answers every message. Records
    the path of every HTTP request, the card's included."""

    def __init__(self, app: Starlette) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        body = _unblocked(body)
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _unblocked(body: bytes) -> bytes:
    try:
        request = json.loads(body)
        parts = request["params"]["message"]["parts"]
        first = str(parts[0].get("text", "")).split(" ", 1)[0]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return body
    if first not in ("slow", "never"):
        return body
    request["params"].setdefault("configuration", {})["blocking"] = False
    return json.dumps(request).encode()


def agent_card(base_url: str, endpoint: str | None = None) -> AgentCard:
    """The card the server serves; `endpoint` points its JSON-RPC interface elsewhere."""
    return AgentCard(
        name="Refund agent",
        description="Answers refund questions for the billing team.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=endpoint or f"{base_url}/a2a",
                protocol_binding="JSONRPC",
                protocol_version="0.3",
            )
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=SKILLS,
    )


class RunningA2aAgent:
    """A started server: its base URL, its card's URL, what its executor saw, and the path of
    every HTTP request it was sent."""

    def __init__(self, base_url: str, executor: ScriptedExecutor, paths: list[str]) -> None:
        self.base_url = base_url
        self.card_url = f"{base_url}/.well-known/agent-card.json"
        self.executor = executor
        self.paths = paths


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running_a2a_agent(endpoint: str | None = None) -> Iterator[RunningA2aAgent]:
    """Serve the SDK's agent on loopback for the block's duration (in a thread of its own)."""
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    executor = ScriptedExecutor()
    card = agent_card(base_url, endpoint)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(
        handler, "/a2a", enable_v0_3_compat=True
    )
    app = _AnswerAtOnce(Starlette(routes=routes))
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    try:
        yield RunningA2aAgent(base_url, executor, app.paths)
    finally:
        server.should_exit = True
        thread.join(timeout=5)
