"""A trace summed up from its spans: the conversation, the tool calls in order, the totals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from agentlasso.traces.messages import Message
from agentlasso.traces.spans import Span
from agentlasso.traces.tool_calls import TraceToolCall, tool_calls
from agentlasso.traces.tree import ReadSpan, read_trace
from agentlasso.traces.values import json_text

__all__ = ["TraceMessage", "TraceSummary", "TraceToolCall", "TraceUsage", "summarise"]

# The attributes naming the conversation a trace is a turn of, the GenAI one first.
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id")
CONVERSATION_ID_MAX_CHARS = 256
# Roles whose text is not the model's reply.
_NOT_REPLY_ROLES = frozenset({"system", "user", "tool"})


class TraceMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One turn of the conversation, for the trace page."""

    role: str  # system, user, assistant, tool
    content: str = ""
    # Tool calls the assistant asked for in this turn (names only; details are in tool_calls).
    tool_names: tuple[str, ...] = ()


class TraceUsage(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens summed over the trace's model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    # False when no model call recorded tokens and an agent span's totals stand in: those
    # already hold its children's, so a later join must not add model calls' to them.
    from_model_calls: bool = True


class TraceSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What a trace says about one conversation with the agent."""

    name: str
    # The agent's input: the user's text, or a JSON value when the trace recorded one.
    input: Any = None
    # The agent's final reply, as text.
    output: str | None = None
    messages: tuple[TraceMessage, ...] = ()
    tool_calls: tuple[TraceToolCall, ...] = ()
    model: str | None = None
    usage: TraceUsage | None = None
    error: str | None = None
    started_ns: int = 0
    duration_ms: int = 0
    span_count: int = 0
    # The conversation the trace is a turn of (gen_ai.conversation.id, else session.id).
    conversation_id: str | None = None
    # What was cut to keep the summary small, in words (app/traces/summary_cuts.py).
    cuts: tuple[str, ...] = ()


def summarise(spans: Sequence[Span]) -> TraceSummary:
    """The summary of one trace's spans (any order, any subset that has arrived so far)."""
    trace = read_trace(spans)
    if not trace:
        return TraceSummary(name="")
    model_calls = sorted(
        (read for read in trace if read.reading.kind == "model_call"),
        key=lambda read: read.span.end_ns,
    )
    agents = sorted(
        (read for read in trace if read.reading.kind == "agent"), key=lambda read: read.depth
    )
    agent_input = _input(agents, trace)
    agent_output = _output(agents, model_calls)
    started_ns, ended_ns = _bounds(trace)
    return TraceSummary(
        name=_name(trace),
        input=agent_input,
        output=agent_output,
        messages=_messages(model_calls, agent_input, agent_output),
        tool_calls=tool_calls(trace),
        model=_model(model_calls, trace),
        usage=_usage(trace),
        error=_error(trace),
        started_ns=started_ns,
        duration_ms=(ended_ns - started_ns + 500_000) // 1_000_000,
        span_count=len(trace),
        conversation_id=conversation_id([read.span for read in trace]),
    )


def conversation_id(spans: Sequence[Span]) -> str | None:
    """The conversation id the first span naming one gives (its own attributes, then its
    resource's), GenAI's attribute before OpenInference's session.id."""
    for key in CONVERSATION_KEYS:
        for span in spans:
            for attributes in (span.attributes, span.resource):
                value = attributes.get(key) if isinstance(attributes, dict) else None
                if isinstance(value, str | int) and not isinstance(value, bool):
                    text = str(value).strip()
                    if text:
                        return text[:CONVERSATION_ID_MAX_CHARS]
    return None


def _name(trace: Sequence[ReadSpan]) -> str:
    """The earliest root span's name, else the earliest span's."""
    root = next((read for read in trace if read.is_root), trace[0])
    return root.span.name if isinstance(root.span.name, str) else ""


def _bounds(trace: Sequence[ReadSpan]) -> tuple[int, int]:
    """The earliest start and the latest end; an end before the start counts as the start."""
    starts = [read.span.start_ns for read in trace if read.span.start_ns > 0]
    started_ns = min(starts, default=0)
    ended_ns = max((read.span.end_ns for read in trace), default=0)
    return started_ns, max(started_ns, ended_ns)


def _input(agents: Sequence[ReadSpan], trace: Sequence[ReadSpan]) -> Any:
    """The root-most agent's recorded input, else the first model call's last user message."""
    for read in agents:
        if read.reading.input not in (None, ""):
            return read.reading.input
        text = _last_user_text(read.reading.input_messages)
        if text is not None:
            return text
    for read in trace:
        if read.reading.kind == "model_call":
            text = _last_user_text(read.reading.input_messages)
            if text is not None:
                return text
    return None


def _output(agents: Sequence[ReadSpan], model_calls: Sequence[ReadSpan]) -> str | None:
    """The root-most agent's recorded reply, else the last model call's.

    An agent's output recorded as a JSON structure (a framework's whole state, say) is not
    the reply a user read, so the model's text comes first then.
    """
    reply = _last_reply(model_calls)
    for read in agents:
        output = read.reading.output
        if isinstance(output, str) and output:
            return output
        if output not in (None, ""):
            return reply if reply is not None else json_text(output)
        text = _reply_text(read.reading.output_messages)
        if text:
            return text
    return reply


def _last_reply(model_calls: Sequence[ReadSpan]) -> str | None:
    """The reply text of the latest-ending model call that recorded its output."""
    for read in reversed(model_calls):
        if read.reading.output_messages:
            return _reply_text(read.reading.output_messages) or None
    return None


def _messages(
    model_calls: Sequence[ReadSpan], agent_input: Any, agent_output: str | None
) -> tuple[TraceMessage, ...]:
    """The last model call's input and output messages (chat APIs resend the whole history)."""
    for read in reversed(model_calls):
        messages = read.reading.input_messages + read.reading.output_messages
        if messages:
            return tuple(map(_trace_message, messages))
    fallback = []
    if agent_input is not None:
        fallback.append(TraceMessage(role="user", content=json_text(agent_input)))
    if agent_output is not None:
        fallback.append(TraceMessage(role="assistant", content=agent_output))
    return tuple(fallback)


def _model(model_calls: Sequence[ReadSpan], trace: Sequence[ReadSpan]) -> str | None:
    """The last model call's model, else any model a span named."""
    for read in reversed(model_calls):
        if read.reading.model is not None:
            return read.reading.model
    return next((read.reading.model for read in trace if read.reading.model), None)


def _usage(trace: Sequence[ReadSpan]) -> TraceUsage | None:
    """Tokens summed over model calls' own counts.

    Agent spans often carry their children's totals, so they count only when no model call
    recorded tokens, and then the root-most one alone.
    """
    counted = [read for read in trace if _has_tokens(read)]
    model_calls = [read for read in counted if read.reading.kind == "model_call"]
    from_model_calls = bool(model_calls)
    if not model_calls and counted:
        model_calls = [min(counted, key=lambda read: read.depth)]
    if not model_calls:
        return None
    return TraceUsage(
        input_tokens=sum(read.reading.input_tokens or 0 for read in model_calls),
        output_tokens=sum(read.reading.output_tokens or 0 for read in model_calls),
        from_model_calls=from_model_calls,
    )


def _error(trace: Sequence[ReadSpan]) -> str | None:
    """The root's error, else the first failed span's, in start order."""
    failed = [read for read in trace if read.reading.failed]
    first = next((read for read in failed if read.is_root), failed[0] if failed else None)
    return first.reading.error if first else None


def _has_tokens(read: ReadSpan) -> bool:
    """Whether the span recorded a token count."""
    return read.reading.input_tokens is not None or read.reading.output_tokens is not None


def _last_user_text(messages: Sequence[Message]) -> str | None:
    """The text of the last user message."""
    return next((m.text for m in reversed(messages) if m.role == "user" and m.text), None)


def _reply_text(messages: Sequence[Message]) -> str:
    """The text of the messages that are the model's reply."""
    return "\n".join(m.text for m in messages if m.role not in _NOT_REPLY_ROLES and m.text)


def _trace_message(message: Message) -> TraceMessage:
    """A message as the trace page shows it."""
    names = tuple(request.name for request in message.tool_requests)
    return TraceMessage(role=message.role, content=message.text, tool_names=names)
