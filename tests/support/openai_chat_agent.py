"""An OpenAI-compatible chat-completions endpoint to register as an `openai_chat` agent: the
scripted model of agents_sdk_agent.py (which the official `openai` client accepts), plus the
hostile answers an endpoint could give, chosen by the last user message:

- `many choices`: 10,000 choices;
- `huge argument`: a tool call whose arguments are `HUGE_BYTES` of JSON text;
- `error`: OpenAI's error object, with a 200;
- `no choices`: an empty `choices` list.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar, post
from litestar.params import JSONBody

from tests.support.agents_sdk_agent import ScriptedModel
from tests.support.servers import serving

HUGE_BYTES = 100 * 1024 * 1024


class HostileModel(ScriptedModel):
    """The scripted model, with hostile answers on request."""

    def hostile(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The hostile answer the last user message asks for, if it asks for one."""
        messages = request.get("messages") or [{}]
        last = str(messages[-1].get("content"))
        if last == "many choices":
            self.requests.append(request)
            choice = {"index": 0, "message": {"role": "assistant", "content": "first"}}
            return {"object": "chat.completion", "choices": [choice] * 10_000}
        if last == "error":
            self.requests.append(request)
            return {"error": {"message": "The model is overloaded.", "code": "overloaded"}}
        if last == "no choices":
            self.requests.append(request)
            return {"object": "chat.completion", "choices": []}
        return None


def model_app(model: HostileModel) -> Litestar:
    """The model as an OpenAI-compatible HTTP server."""

    @post("/v1/chat/completions", status_code=200)
    async def completions(data: JSONBody[dict[str, Any]]) -> Any:
        messages = data.get("messages") or [{}]
        if messages[-1].get("content") == "huge argument":
            model.requests.append(data)
            return _huge_tool_call()
        return model.hostile(data) or model.answer(data)

    return Litestar([completions])


def _huge_tool_call() -> bytes:
    """A completion whose one tool call's arguments are far over any body cap."""
    arguments = json.dumps({"note": "x" * HUGE_BYTES})
    call = {"id": "call_1", "type": "function",
            "function": {"name": "lookup_order", "arguments": arguments}}  # fmt: skip
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return json.dumps({"object": "chat.completion", "choices": [{"message": message}]}).encode()


@asynccontextmanager
async def running_openai_endpoint() -> AsyncIterator[tuple[str, HostileModel]]:
    """The endpoint's base URL (`.../v1`, as the openai client takes it) and its model."""
    model = HostileModel()
    async with serving(model_app(model)) as base_url:
        yield f"{base_url}/v1", model
