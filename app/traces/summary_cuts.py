"""A trace's summary cut to a bounded size, each cut said: where it is made, and in a list.

A summary is stored once and read by every list and page, so an input of 30 MB would cost
30 MB on every read: texts are cut to a number of characters, structures too large to keep
become their JSON text cut the same way, and the conversation and tool calls keep their first
items. The list of cuts goes with the summary, so a reader knows what is not all there.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from agentlasso.traces.limits import TraceLimits
from agentlasso.traces.spans import Span
from agentlasso.traces.summary import TraceMessage, TraceSummary, TraceToolCall
from agentlasso.traces.values import json_text

# A summary lists at most this many of its cuts, then how many more there were.
_CUTS_NAMED = 10
_Item = TypeVar("_Item", TraceMessage, TraceToolCall)


def cut_mark(limit: int) -> str:
    """What ends a cut text: it says the cut."""
    return f"… (cut at {limit:,} characters)"


def cut_summary(summary: TraceSummary, limits: TraceLimits) -> TraceSummary:
    """The summary within the limits, with `cuts` saying what was cut."""
    cuts: list[str] = []
    chars = limits.summary_chars

    def text(value: str | None, what: str) -> str | None:
        return None if value is None else _cut_text(value, chars, what, cuts)

    def value(given: Any, what: str) -> Any:
        return _cut_value(given, chars, what, cuts)

    messages = _first(summary.messages, limits.summary_items, "messages", cuts)
    calls = _first(summary.tool_calls, limits.summary_items, "tool calls", cuts)
    return msgspec.structs.replace(
        summary,
        name=text(summary.name, "the name") or "",
        input=value(summary.input, "the input"),
        output=text(summary.output, "the reply"),
        error=text(summary.error, "the error"),
        model=text(summary.model, "the model"),
        messages=tuple(
            TraceMessage(
                role=message.role[:100],
                content=text(message.content, f"message {number}") or "",
                tool_names=tuple(name[:256] for name in message.tool_names[: limits.summary_items]),
            )
            for number, message in enumerate(messages, start=1)
        ),
        tool_calls=tuple(
            msgspec.structs.replace(
                call,
                name=call.name[:256],
                arguments=value(call.arguments, f"tool call {number}'s arguments"),
                result=value(call.result, f"tool call {number}'s result"),
                error=text(call.error, f"tool call {number}'s error"),
            )
            for number, call in enumerate(calls, start=1)
        ),
        cuts=_named(cuts),
    )


def _cut_text(text: str, limit: int, what: str, cuts: list[str]) -> str:
    if len(text) <= limit or _was_cut(text, limit):
        return text
    cuts.append(f"{what} cut at {limit:,} of {len(text):,} characters")
    return text[:limit] + cut_mark(limit)


def _was_cut(text: str, limit: int) -> bool:
    """Whether the text is one cut before (a summary joined with new spans is cut again)."""
    mark = cut_mark(limit)
    return len(text) == limit + len(mark) and text.endswith(mark)


def _cut_value(value: Any, limit: int, what: str, cuts: list[str]) -> Any:
    """Text cut; a structure kept when its JSON fits, else its JSON text cut; else as is."""
    if isinstance(value, str):
        return _cut_text(value, limit, what, cuts)
    if not isinstance(value, dict | list):
        return value
    written = json_text(value)
    return value if len(written) <= limit else _cut_text(written, limit, what, cuts)


def _first(items: tuple[_Item, ...], limit: int, what: str, cuts: list[str]) -> tuple[_Item, ...]:
    if len(items) <= limit:
        return items
    cuts.append(f"the first {limit:,} of {len(items):,} {what} kept")
    return items[:limit]


def _named(cuts: list[str]) -> tuple[str, ...]:
    if len(cuts) <= _CUTS_NAMED:
        return tuple(cuts)
    return (*cuts[:_CUTS_NAMED], f"and {len(cuts) - _CUTS_NAMED:,} more cuts")


def cut_span(span: Span, limit: int) -> Span:
    """The span as it is stored: each attribute (of the span, its events and its resource)
    longer than `limit` characters cut there, saying so. Nothing ever shows more of a value
    (a trace's page and answer cut it the same way), so storing more would only cost."""
    return msgspec.structs.replace(
        span,
        attributes=_cut_attributes(span.attributes, limit),
        events=tuple(
            msgspec.structs.replace(event, attributes=_cut_attributes(event.attributes, limit))
            for event in span.events
        ),
        resource=_cut_attributes(span.resource, limit),
    )


def _cut_attributes(attributes: dict[str, Any], limit: int) -> dict[str, Any]:
    ignored: list[str] = []
    return {key: _cut_value(value, limit, key, ignored) for key, value in attributes.items()}
