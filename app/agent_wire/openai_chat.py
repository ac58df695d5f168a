"""An OpenAI-compatible chat-completions endpoint as an agent (contract section 14).

The request: `model`, then `messages` (the agent's system prompt first when set, the suite's
data context as a system message, the conversation's history, this turn's user message) and
the agent's declared tools as function tools. The reply: `choices[0].message.content` and its
`tool_calls`. The platform never executes a tool the model asks for: one model answer a turn.

Decisions where the protocol leaves a choice:
- History is sent as the user and assistant texts only. An assistant message with
  `tool_calls` must be followed by a `tool` message answering each call, which the platform
  cannot write (it ran no tool), and strict servers refuse the request without one.
- An answer states what the model called: no `tool_calls` in it means no calls (not
  "unreported", as in the agentlasso protocol), and a null `content` is the empty reply.
- Tool fixtures are never sent: the endpoint is a model, not an agent that runs tools.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import msgspec

from agentlasso.agent_wire.calls import AgentTarget
from agentlasso.agent_wire.replies import Reply
from agentlasso.domain.json_nesting import MAX_DEPTH, too_deep

_CONTEXT_PREFIX = "The data context of this test (JSON): "


class _Function(msgspec.Struct, frozen=True):
    name: Any = None
    arguments: Any = None


class _ToolCall(msgspec.Struct, frozen=True):
    function: _Function | None = None


class _Message(msgspec.Struct, frozen=True):
    content: Any = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(msgspec.Struct, frozen=True):
    message: _Message | None = None


class _Error(msgspec.Struct, frozen=True):
    message: Any = None
    code: Any = None


class _Answer(msgspec.Struct, frozen=True):
    # Raw: of thousands of choices only the first is decoded.
    choices: list[msgspec.Raw] | None = None
    error: _Error | None = None


_answer_decoder = msgspec.json.Decoder(_Answer)
_choice_decoder = msgspec.json.Decoder(_Choice)
_encoder = msgspec.json.Encoder()


def encode_request(target: AgentTarget, body: Mapping[str, Any]) -> bytes:
    """The chat-completions request for one turn of the platform's request body."""
    request: dict[str, Any] = {}
    if target.model:
        request["model"] = target.model
    request["messages"] = _messages(target, body)
    tools = _function_tools(target.tools)
    if tools:  # an empty list is refused by OpenAI's own API
        request["tools"] = tools
    return _encoder.encode(request)


def _messages(target: AgentTarget, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The system prompt, the data context, the history and this turn's user message."""
    messages: list[dict[str, Any]] = []
    if target.system_prompt:
        messages.append({"role": "system", "content": target.system_prompt})
    context = body.get("context")
    if context:
        text = _CONTEXT_PREFIX + _encoder.encode(context).decode()
        messages.append({"role": "system", "content": text})
    for earlier in body.get("messages") or ():
        role = "assistant" if earlier.get("role") == "assistant" else "user"
        messages.append({"role": role, "content": _text(earlier.get("content"))})
    messages.append({"role": "user", "content": _text(body.get("input"))})
    return messages


def _text(value: Any) -> str:
    """A message's content as text: a JSON-object input is sent as its JSON."""
    if isinstance(value, str):
        return value
    return "" if value is None else _encoder.encode(value).decode()


# A run's calls share one target: its tools are converted once (kept by the tuple's identity,
# the tuple held so the identity is not reused).
_converted: dict[int, tuple[tuple[dict[str, Any], ...], list[dict[str, Any]]]] = {}
_CONVERTED_KEPT = 256


def _function_tools(declared: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The declared tools as OpenAI function tools, nameless ones left out."""
    if not declared:
        return []
    kept = _converted.get(id(declared))
    if kept is not None and kept[0] is declared:
        return kept[1]
    tools = [tool for each in declared if (tool := _function_tool(each)) is not None]
    if len(_converted) >= _CONVERTED_KEPT:
        _converted.clear()
    _converted[id(declared)] = (declared, tools)
    return tools


def _function_tool(tool: Any) -> dict[str, Any] | None:
    """A declared tool as an OpenAI function tool (Anthropic's and the flat shapes converted);
    None for an entry with no name."""
    if not isinstance(tool, dict):
        return None
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        return tool
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        return None
    function: dict[str, Any] = {"name": name}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    schema = tool.get("input_schema", tool.get("parameters"))
    function["parameters"] = schema if isinstance(schema, dict) else {"type": "object"}
    return {"type": "function", "function": function}


def decode_answer(content: bytes) -> Reply | str:
    """The reply in a chat completion, or a sentence saying why the body is not one."""
    if too_deep(content) is not None:
        return "the agent's answer is JSON nested too deeply to read"
    try:
        answer = _answer_decoder.decode(content)
    except msgspec.DecodeError as exc:
        return f"the agent's answer is not a chat completion: {exc}"
    if answer.error is not None:
        return _error_sentence(answer.error)
    if not answer.choices:
        return "the agent's answer is a chat completion with no choices"
    try:
        message = _choice_decoder.decode(answer.choices[0]).message
    except msgspec.DecodeError as exc:
        return f"the agent's answer's first choice is not a chat message: {exc}"
    if message is None:
        return "the agent's answer's first choice has no message"
    if message.content is not None and not isinstance(message.content, str):
        return "the agent's answer's message content is not text"
    return Reply(message.content or "", [_tool_call(call) for call in message.tool_calls or ()])


def _tool_call(call: _ToolCall) -> dict[str, Any]:
    """An OpenAI tool call as section 3's `{"name", "arguments"}`: the arguments' JSON string
    decoded when it is JSON, else kept as it came (a check then says it is not an object)."""
    function = call.function or _Function()
    arguments = function.arguments
    if isinstance(arguments, str) and not _may_be_too_deep(arguments):
        with contextlib.suppress(msgspec.DecodeError):  # not JSON: kept as the string
            arguments = msgspec.json.decode(arguments)
    return {"name": function.name, "arguments": arguments}


def _may_be_too_deep(text: str) -> bool:
    """Whether the text could nest past the limit: a short one cannot (each level takes two
    characters), so only a long one is scanned."""
    return len(text) > 2 * MAX_DEPTH and too_deep(text) is not None


def _error_sentence(error: _Error) -> str:
    """The endpoint's own error, in a bounded sentence."""
    message = error.message if isinstance(error.message, str) else "no message"
    code = f" ({str(error.code)[:64]})" if error.code is not None else ""
    return f"the agent's answer is an error{code}: {message[:500]}"
