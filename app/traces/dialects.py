"""One span's attributes read in the three dialects (GenAI semconv, OpenLLMetry, OpenInference)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from agentlasso.traces.messages import (
    Message,
    event_messages,
    indexed_messages,
    messages_from_json,
    openinference_messages,
    system_messages,
)
from agentlasso.traces.spans import STATUS_ERROR, Span, SpanEvent
from agentlasso.traces.values import (
    count_or_none,
    json_or_text,
    structure_or_text,
    text_or_none,
)

SpanKind = Literal["model_call", "tool_call", "agent", "other"]

_OPENINFERENCE_KINDS: dict[str, SpanKind] = {
    "LLM": "model_call",
    "EMBEDDING": "model_call",
    "TOOL": "tool_call",
    "AGENT": "agent",
    "CHAIN": "agent",
}
_GENAI_OPERATIONS: dict[str, SpanKind] = {
    "chat": "model_call",
    "text_completion": "model_call",
    "generate_content": "model_call",
    "embeddings": "model_call",
    "execute_tool": "tool_call",
    "invoke_agent": "agent",
    "create_agent": "agent",
    "invoke_workflow": "agent",
}
# A Traceloop task is a step of a workflow, as an OpenInference chain is.
_TRACELOOP_KINDS: dict[str, SpanKind] = {
    "tool": "tool_call",
    "agent": "agent",
    "workflow": "agent",
    "task": "agent",
}
# Attributes only a model call carries, when no kind attribute says what the span is.
_MODEL_CALL_KEYS = (
    "gen_ai.request.model",
    "gen_ai.response.model",
    "llm.request.type",
    "llm.model_name",
    "gen_ai.input.messages",
    "gen_ai.prompt.0.role",
    "gen_ai.prompt.0.content",
)

_MODEL_KEYS = (
    "gen_ai.response.model",
    "gen_ai.request.model",
    "llm.model_name",
    "llm.response.model",
    "llm.request.model",
)
_INPUT_TOKEN_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "llm.usage.prompt_tokens",
)
_OUTPUT_TOKEN_KEYS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "llm.usage.completion_tokens",
)
_TOOL_NAME_KEYS = ("gen_ai.tool.name", "tool.name", "traceloop.entity.name")
_TOOL_CALL_ID_KEYS = ("gen_ai.tool.call.id", "tool_call.id")


class SpanReading(msgspec.Struct, frozen=True, kw_only=True):
    """What one span says about the conversation, whichever dialect recorded it."""

    kind: SpanKind = "other"
    input_messages: tuple[Message, ...] = ()
    output_messages: tuple[Message, ...] = ()
    # The input and output an agent, chain or tool span recorded as values, decoded when JSON.
    input: Any = None
    output: Any = None
    # Set on tool call spans only.
    tool_name: str | None = None
    tool_call_id: str | None = None
    arguments: Any = None
    result: Any = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    # The span ended with status error; `error` may also hold a recorded exception without that.
    failed: bool = False
    error: str | None = None


def read_span(span: Span) -> SpanReading:
    """The span's attributes and events read in whichever dialect they are in."""
    attributes = span.attributes if isinstance(span.attributes, dict) else {}
    events = span.events if isinstance(span.events, tuple | list) else ()
    kind = span_kind(attributes)
    recorded_input = _recorded_input(attributes)
    recorded_output = _recorded_value(attributes, "output")
    is_tool = kind == "tool_call"
    return SpanReading(
        kind=kind,
        input_messages=_input_messages(attributes, events),
        output_messages=_output_messages(attributes, events),
        input=recorded_input,
        output=recorded_output,
        tool_name=_tool_name(span, attributes) if is_tool else None,
        tool_call_id=_first_text(attributes, _TOOL_CALL_ID_KEYS) if is_tool else None,
        arguments=_tool_value(attributes, "arguments", recorded_input) if is_tool else None,
        result=_tool_value(attributes, "result", recorded_output) if is_tool else None,
        model=_first_text(attributes, _MODEL_KEYS),
        input_tokens=_first_count(attributes, _INPUT_TOKEN_KEYS),
        output_tokens=_first_count(attributes, _OUTPUT_TOKEN_KEYS),
        failed=span.status_code == STATUS_ERROR,
        error=_error(span, attributes, events),
    )


def span_kind(attributes: Mapping[str, Any]) -> SpanKind:
    """What the span is: a model call, a tool call, an agent (or chain) step, or something else."""
    openinference = text_or_none(attributes.get("openinference.span.kind"))
    if openinference is not None:
        return _OPENINFERENCE_KINDS.get(openinference.upper(), "other")
    operation = text_or_none(attributes.get("gen_ai.operation.name"))
    if operation in _GENAI_OPERATIONS:
        return _GENAI_OPERATIONS[operation]
    traceloop = text_or_none(attributes.get("traceloop.span.kind"))
    if traceloop in _TRACELOOP_KINDS:
        return _TRACELOOP_KINDS[traceloop]
    if attributes.get("gen_ai.tool.name") is not None:
        return "tool_call"
    if any(attributes.get(key) is not None for key in _MODEL_CALL_KEYS):
        return "model_call"
    return "other"


def _input_messages(
    attributes: Mapping[str, Any], events: Sequence[SpanEvent]
) -> tuple[Message, ...]:
    """The messages sent to the model, system instructions first when recorded apart."""
    messages = (
        messages_from_json(attributes.get("gen_ai.input.messages"), "user")
        or indexed_messages(attributes, "gen_ai.prompt", "user")
        or openinference_messages(attributes, "llm.input_messages")
        or event_messages(events)[0]
        or messages_from_json(attributes.get("gen_ai.prompt"), "user")
    )
    if any(message.role == "system" for message in messages):
        return messages
    return system_messages(attributes.get("gen_ai.system_instructions")) + messages


def _output_messages(
    attributes: Mapping[str, Any], events: Sequence[SpanEvent]
) -> tuple[Message, ...]:
    """The messages the model answered with."""
    return (
        messages_from_json(attributes.get("gen_ai.output.messages"), "assistant")
        or indexed_messages(attributes, "gen_ai.completion", "assistant")
        or openinference_messages(attributes, "llm.output_messages")
        or event_messages(events)[1]
        or messages_from_json(attributes.get("gen_ai.completion"), "assistant")
    )


def _recorded_value(attributes: Mapping[str, Any], direction: str) -> Any:
    """OpenInference's `input.value`/`output.value` or Traceloop's `traceloop.entity.*`."""
    value = attributes.get(f"{direction}.value")
    if value is not None:
        mime_type = text_or_none(attributes.get(f"{direction}.mime_type")) or ""
        return json_or_text(value) if "json" in mime_type.lower() else value
    value = attributes.get(f"traceloop.entity.{direction}")
    return None if value is None else json_or_text(value)


def _recorded_input(attributes: Mapping[str, Any]) -> Any:
    """The recorded input, without the `{"args", "kwargs"}` wrapper Traceloop's decorators add."""
    value = _recorded_value(attributes, "input")
    if not isinstance(value, dict) or set(value) != {"args", "kwargs"}:
        return value
    args, kwargs = value["args"], value["kwargs"]
    if args == [] and isinstance(kwargs, dict):
        return kwargs
    if isinstance(args, list) and len(args) == 1 and not kwargs:
        return args[0]
    return value


def _tool_name(span: Span, attributes: Mapping[str, Any]) -> str:
    """The tool's name; GenAI's `execute_tool` span is named after its tool, as a last resort."""
    name = _first_text(attributes, _TOOL_NAME_KEYS)
    if name is not None:
        return name
    span_name = span.name if isinstance(span.name, str) else ""
    return span_name.removeprefix("execute_tool").strip() or "unknown"


def _tool_value(attributes: Mapping[str, Any], part: str, recorded: Any) -> Any:
    """A tool span's arguments or result: GenAI's `gen_ai.tool.call.*`, else the recorded value."""
    value = attributes.get(f"gen_ai.tool.call.{part}")
    return structure_or_text(recorded if value is None else value)


def _error(span: Span, attributes: Mapping[str, Any], events: Iterable[SpanEvent]) -> str | None:
    """Why the span failed: status message, `error.type`, exception event, or its name."""
    exception = _exception_message(events)
    if span.status_code != STATUS_ERROR:
        return exception
    return (
        text_or_none(span.status_message)
        or text_or_none(attributes.get("error.type"))
        or exception
        or f"{text_or_none(span.name) or 'span'} failed"
    )


def _exception_message(events: Iterable[SpanEvent]) -> str | None:
    """The first recorded exception's message (or type)."""
    for event in events:
        attributes = getattr(event, "attributes", None)
        if getattr(event, "name", None) != "exception" or not isinstance(attributes, dict):
            continue
        message = _first_text(attributes, ("exception.message", "exception.type"))
        if message is not None:
            return message
    return None


def _first_text(attributes: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    """The first of the keys holding text."""
    return next((text for key in keys if (text := text_or_none(attributes.get(key)))), None)


def _first_count(attributes: Mapping[str, Any], keys: Iterable[str]) -> int | None:
    """The first of the keys holding a count."""
    counts = (count_or_none(attributes.get(key)) for key in keys)
    return next((count for count in counts if count is not None), None)
