"""Messages to and from a model, read from each dialect's way of recording them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from agentlasso.traces.spans import SpanEvent
from agentlasso.traces.values import (
    indexed_groups,
    json_text,
    structure,
    structure_or_text,
    text_or_none,
)

# Part types across GenAI semconv, OpenAI and Anthropic message shapes.
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_REQUEST_PARTS = frozenset({"tool_call", "function_call", "tool_use"})
_RESPONSE_PARTS = frozenset({"tool_call_response", "tool_result", "function_call_output"})

# Framework role names, folded into the four the trace page shows.
_ROLE_ALIASES = {
    "human": "user",
    "ai": "assistant",
    "model": "assistant",
    "developer": "system",
    "function": "tool",
}

# The per-message span events of earlier GenAI semconv versions.
_INPUT_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


class ToolRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call a model asked for."""

    name: str
    # A JSON object or array when the arguments parse as one, else as recorded.
    arguments: Any = None
    call_id: str | None = None


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """One message to or from a model, whichever dialect recorded it."""

    role: str
    text: str = ""
    tool_requests: tuple[ToolRequest, ...] = ()
    # On a tool's response: the id of the call it answers.
    call_id: str | None = None


def messages_from_json(value: Any, default_role: str) -> tuple[Message, ...]:
    """Messages given as a list of message objects (or its JSON text); plain text as one message."""
    decoded = structure(value)
    if isinstance(decoded, dict):
        decoded = [decoded]
    if decoded is None:
        text = text_or_none(value)
        return (Message(role=default_role, text=text),) if text else ()
    return tuple(message for item in decoded for message in message_from_object(item, default_role))


def system_messages(value: Any) -> tuple[Message, ...]:
    """GenAI's `gen_ai.system_instructions` (parts, their JSON, or text) as a system message."""
    text = content_text(structure_or_text(value))
    return (Message(role="system", text=text),) if text else ()


def indexed_messages(
    attributes: Mapping[str, Any], prefix: str, default_role: str
) -> tuple[Message, ...]:
    """OpenLLMetry's flattened `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` messages."""
    messages: list[Message] = []
    for fields in indexed_groups(attributes, prefix):
        content = fields.get("content")
        # Some instrumentations store a list of content parts as JSON text.
        parts = structure(content) if isinstance(content, str) else None
        message = {
            "role": fields.get("role"),
            "content": parts if _is_part_list(parts) else content,
            "tool_calls": indexed_groups(fields, "tool_calls"),
            "tool_call_id": fields.get("tool_call_id"),
        }
        messages.extend(message_from_object(message, default_role))
    return tuple(messages)


def openinference_messages(attributes: Mapping[str, Any], prefix: str) -> tuple[Message, ...]:
    """OpenInference's flattened `llm.input_messages.N.message.*` (or output) messages."""
    messages: list[Message] = []
    for fields in indexed_groups(attributes, prefix):
        content = fields.get("message.content")
        if content is None:
            content = [
                {"type": "text", "text": part.get("message_content.text")}
                for part in indexed_groups(fields, "message.contents")
            ]
        message = {
            "role": fields.get("message.role"),
            "content": content,
            "tool_calls": _openinference_tool_calls(fields),
            "tool_call_id": fields.get("message.tool_call_id"),
        }
        messages.extend(message_from_object(message, "user"))
    return tuple(messages)


def event_messages(events: Iterable[SpanEvent]) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """(input, output) messages recorded as span events, as earlier GenAI semconv versions did."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    for event in events:
        name = getattr(event, "name", None)
        attributes = getattr(event, "attributes", None)
        if not isinstance(attributes, dict) or not isinstance(name, str):
            continue
        if name in _INPUT_EVENT_ROLES:
            inputs.extend(message_from_object(_event_body(attributes), _INPUT_EVENT_ROLES[name]))
        elif name == "gen_ai.choice":
            outputs.extend(_choice_messages(attributes))
        else:
            # The single-event forms: older `gen_ai.content.*` and newer operation details.
            for key in ("gen_ai.prompt", "gen_ai.input.messages"):
                inputs.extend(messages_from_json(attributes.get(key), "user"))
            for key in ("gen_ai.completion", "gen_ai.output.messages"):
                outputs.extend(messages_from_json(attributes.get(key), "assistant"))
    return tuple(inputs), tuple(outputs)


def message_from_object(value: Any, default_role: str) -> list[Message]:
    """One message object (GenAI parts, OpenAI or Anthropic shape) as messages.

    Tool responses inside it become messages of their own, role `tool`.
    """
    if isinstance(value, str):
        return [Message(role=default_role, text=value)]
    if not isinstance(value, dict):
        return []
    role = _role(value.get("role"), default_role)
    parts = [_read_part(part) for part in _content_parts(value)]
    texts = [part for part in parts if isinstance(part, str)]
    requests = [part for part in parts if isinstance(part, ToolRequest)]
    requests.extend(_tool_requests(value))
    responses = [part for part in parts if isinstance(part, Message)]
    messages = []
    if texts or requests or not responses:
        call_id = (value.get("tool_call_id") or value.get("id")) if role == "tool" else None
        messages.append(
            Message(
                role=role,
                text="\n".join(texts),
                tool_requests=tuple(requests),
                call_id=text_or_none(call_id),
            )
        )
    return messages + responses


def content_text(content: Any) -> str:
    """The text of message content: text, a part, or a list of parts (text parts joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    texts = [part for part in map(_read_part, parts) if isinstance(part, str)]
    return "\n".join(texts) if texts else json_text(content)


def _content_parts(message: Mapping[str, Any]) -> list[Any]:
    """The message's content as a list of parts, whichever key and shape holds it."""
    content = message.get("parts")
    if content is None:
        content = message.get("content")
    if content is None:
        return []
    if isinstance(content, list):
        return content
    if isinstance(content, str | dict):
        return [content]
    return [json_text(content)]


def _read_part(part: Any) -> str | ToolRequest | Message | None:
    """A content part as text, a tool request, a tool response, or None when it is neither."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind is not None and not isinstance(kind, str):
        return None
    if kind in _REQUEST_PARTS:
        return _tool_request(part)
    if kind in _RESPONSE_PARTS:
        return _tool_response(part)
    if kind is None or kind in _TEXT_PARTS:
        for key in ("content", "text"):
            if isinstance(part.get(key), str):
                return str(part[key])
    return None


def _tool_requests(message: Mapping[str, Any]) -> list[ToolRequest]:
    """The OpenAI-style `tool_calls` (and legacy `function_call`) of a message."""
    calls = structure(message.get("tool_calls"))
    items = list(calls) if isinstance(calls, list) else []
    legacy = structure(message.get("function_call"))
    if isinstance(legacy, dict):
        items.append(legacy)
    return [request for request in map(_tool_request, items) if request is not None]


def _tool_request(item: Any) -> ToolRequest | None:
    """One requested call: `{id, function: {name, arguments}}` or `{id, name, arguments|input}`."""
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    source = function if isinstance(function, dict) else item
    name = text_or_none(source.get("name"))
    if name is None:
        return None
    arguments = next(
        (source[key] for key in ("arguments", "input", "args") if source.get(key) is not None),
        None,
    )
    call_id = text_or_none(item.get("id") or item.get("call_id"))
    return ToolRequest(name=name, arguments=structure_or_text(arguments), call_id=call_id)


def _tool_response(part: Mapping[str, Any]) -> Message:
    """A tool response part as a `tool` message."""
    response = next(
        (part[key] for key in ("response", "content", "output") if part.get(key) is not None),
        None,
    )
    call_id = part.get("id") or part.get("tool_use_id") or part.get("call_id")
    return Message(role="tool", text=content_text(response), call_id=text_or_none(call_id))


def _openinference_tool_calls(fields: Mapping[str, Any]) -> list[dict[str, Any]]:
    """OpenInference's flattened tool calls of one message, in the OpenAI shape."""
    calls = [
        {
            "id": call.get("tool_call.id"),
            "function": {
                "name": call.get("tool_call.function.name"),
                "arguments": call.get("tool_call.function.arguments"),
            },
        }
        for call in indexed_groups(fields, "message.tool_calls")
    ]
    if fields.get("message.function_call_name") is not None:
        legacy = {
            "name": fields.get("message.function_call_name"),
            "arguments": fields.get("message.function_call_arguments_json"),
        }
        calls.append({"function": legacy})
    return calls


def _event_body(attributes: Mapping[str, Any]) -> Any:
    """A message event's body: its attributes, or a JSON body some exporters put in one."""
    for key in ("body", "gen_ai.event.content"):
        body = structure(attributes.get(key))
        if isinstance(body, dict):
            return body
    return attributes


def _choice_messages(attributes: Mapping[str, Any]) -> list[Message]:
    """A `gen_ai.choice` event's message: under `message`, or the body itself."""
    body = _event_body(attributes)
    message = structure(body.get("message")) if isinstance(body, dict) else None
    return message_from_object(message if isinstance(message, dict) else body, "assistant")


def _role(value: Any, default_role: str) -> str:
    """The role, lower-cased and folded into system, user, assistant, tool where known."""
    role = text_or_none(value)
    if role is None:
        return default_role
    role = role.lower()
    return _ROLE_ALIASES.get(role, role)


def _is_part_list(value: Any) -> bool:
    """Whether the value looks like a list of typed content parts."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(part, dict) and "type" in part for part in value)
    )
