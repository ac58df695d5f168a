"""A real agent framework as a test partner: an OpenAI Agents SDK agent behind AgentLasso's turn
protocol (contract sections 3 and 13), its model a scripted OpenAI-compatible server.

Both are served over HTTP on 127.0.0.1 in the test's event loop:

- the model: `POST /v1/chat/completions`, answering from the messages it is sent, as a model
  would (so what it "remembers" is only what the SDK sent it): a user message naming an order
  number asks for the `lookup_order` tool; the tool's answer is read back; asked for the order
  number, it finds the last number any user message of the conversation gave, or says it has
  none.
- the agent: `POST /` with `input`, `conversation_id`, `turn` and `messages`; it keeps each
  conversation in the SDK's own SQLiteSession, keyed by `conversation_id` (the platform's
  `messages` are ignored: the session is the memory), and answers `{"output", "tool_calls"}`
  with the calls its function tools made during this turn.

The SDK's tracing is off for every run: it would export to OpenAI's servers.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
)
from agents.items import ToolCallItem, ToolCallOutputItem
from litestar import Litestar, post
from litestar.params import JSONBody
from openai import AsyncOpenAI

from tests.support.servers import serving

MODEL = "scripted-model"
INSTRUCTIONS = "You are the shop's support agent. Look orders up with lookup_order."
ORDERS = {"4417": "shipped on Monday, arriving Friday", "5120": "being packed"}
NUMBER = re.compile(r"\b(\d{4})\b")


@function_tool
def lookup_order(order_id: str) -> str:
    """Find an order by its number and say where it is."""
    status = ORDERS.get(order_id)
    return f"Order {order_id} is {status}." if status else f"There is no order {order_id}."


class ScriptedModel:
    """The model's side: a chat-completions answer from the messages sent, and every request
    kept for the test to read."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The completion for one request."""
        self.requests.append(request)
        messages = request.get("messages") or []
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return self._completion(content=f"{last.get('content')} Anything else?")
        text = _text(last.get("content"))
        if "order number" in text.lower():
            return self._completion(content=self._remembered(messages))
        found = NUMBER.search(text)
        if found and _offers_tool(request, "lookup_order"):
            call = {"id": f"call_{next(self._ids)}", "type": "function",
                    "function": {"name": "lookup_order",
                                 "arguments": json.dumps({"order_id": found[1]})}}  # fmt: skip
            return self._completion(tool_calls=[call])
        return self._completion(content="Glad to help. Is there anything else?")

    def _remembered(self, messages: list[dict[str, Any]]) -> str:
        """The last order number a user message gave, from the history the model was sent."""
        for message in reversed(messages[:-1]):
            found = (
                NUMBER.search(_text(message.get("content")))
                if message.get("role") == "user"
                else None
            )
            if found:
                return f"Your order number is {found[1]}."
        return "I don't know your order number yet: what is it?"

    def _completion(
        self, *, content: str | None = None, tool_calls: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 1_796_119_200,
            "model": MODEL,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
        }  # fmt: skip


def _text(content: Any) -> str:
    """A chat message's text, whether a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _offers_tool(request: dict[str, Any], name: str) -> bool:
    tools = request.get("tools") or []
    return any((tool.get("function") or {}).get("name") == name for tool in tools)


def model_app(model: ScriptedModel) -> Litestar:
    """The scripted model as an OpenAI-compatible HTTP server."""

    @post("/v1/chat/completions", status_code=200)
    async def completions(data: JSONBody[dict[str, Any]]) -> dict[str, Any]:
        return model.answer(data)

    return Litestar([completions])


class SdkAgent:
    """The OpenAI Agents SDK agent under test, its sessions kept by conversation id."""

    def __init__(self, model_url: str, sessions_db: Path) -> None:
        client = AsyncOpenAI(base_url=f"{model_url}/v1", api_key="sk-test-not-a-real-key")
        self.agent = Agent(
            name="shop-support",
            instructions=INSTRUCTIONS,
            tools=[lookup_order],
            model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        )
        self.sessions_db = sessions_db
        self.sessions: dict[str, SQLiteSession] = {}

    def session_for(self, conversation_id: str) -> SQLiteSession:
        """The SDK session of this conversation, opened on first use."""
        if conversation_id not in self.sessions:
            self.sessions[conversation_id] = SQLiteSession(conversation_id, self.sessions_db)
        return self.sessions[conversation_id]

    async def turn(self, body: dict[str, Any]) -> dict[str, Any]:
        """One turn of the protocol: the reply, and the tool calls made during it."""
        conversation_id = body.get("conversation_id")
        session = self.session_for(str(conversation_id)) if conversation_id else None
        result = await Runner.run(
            self.agent, str(body.get("input") or ""), session=session,
            run_config=RunConfig(tracing_disabled=True),
        )  # fmt: skip
        return {"output": str(result.final_output), "tool_calls": _tool_calls(result.new_items)}

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()


def _tool_calls(items: list[Any]) -> list[dict[str, Any]]:
    """The function calls of this run, in order, each with its result."""
    results = {
        _raw(item, "call_id"): item.output for item in items if isinstance(item, ToolCallOutputItem)
    }
    calls = []
    for item in items:
        if not isinstance(item, ToolCallItem):
            continue
        arguments = _raw(item, "arguments")
        calls.append({
            "name": _raw(item, "name"),
            "arguments": json.loads(arguments) if isinstance(arguments, str) else arguments,
            "result": results.get(_raw(item, "call_id")),
        })  # fmt: skip
    return calls


def _raw(item: Any, field: str) -> Any:
    raw = item.raw_item
    return raw.get(field) if isinstance(raw, dict) else getattr(raw, field, None)


def agent_app(agent: SdkAgent) -> Litestar:
    """The agent behind AgentLasso's turn protocol."""

    @post("/", status_code=200)
    async def turn(data: JSONBody[dict[str, Any]]) -> dict[str, Any]:
        return await agent.turn(data)

    return Litestar([turn])


@contextlib.asynccontextmanager
async def running_sdk_agent(workdir: Path) -> AsyncIterator[tuple[str, SdkAgent, ScriptedModel]]:
    """The scripted model and the agent, both served on 127.0.0.1: (the agent's URL, the agent,
    the model)."""
    model = ScriptedModel()
    async with serving(model_app(model)) as model_url:
        agent = SdkAgent(model_url, workdir / "agent-sessions.sqlite3")
        try:
            async with serving(agent_app(agent)) as agent_url:
                yield f"{agent_url}/", agent, model
        finally:
            agent.close()
