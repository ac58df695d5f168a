"""What the Traces pages show of a trace: a list row, its conversation, its tool calls placed
on a time bar, its raw spans. Nothing here does I/O."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from agentlasso.db.traces import TraceRow
from agentlasso.domain.checks import PRODUCT_NAMES
from agentlasso.domain.grades import CaseResult
from agentlasso.domain.json_nesting import too_deep
from agentlasso.traces.spans import STATUS_ERROR, STATUS_OK, Span

INPUT_SHOWN_CHARS = 140
REPLY_SHOWN_CHARS = 140
TOOLS_LISTED = 6
SPAN_KINDS = {
    0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"
}  # fmt: skip
# A call too short to see on the bar is drawn this wide (percent of the trace).
MIN_BAR_PERCENT = 0.5


def moment(value: datetime) -> str:
    """A trace's time as the pages show it: UTC to the second."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(ms: int | float | None) -> str:
    """A duration in words people read at a glance."""
    if ms is None:
        return "not recorded"
    if ms < 1000:
        return f"{ms:,.0f} ms"
    return f"{ms / 1000:,.2f} s"


def shown_value(value: Any) -> str:
    """A recorded value as text: text as it is, anything else as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def pretty(value: Any) -> str:
    """A tool's arguments or result, indented: JSON in a string is read as JSON first."""
    if isinstance(value, str) and too_deep(value) is None:
        try:
            return shown_value(json.loads(value))
        except ValueError:
            return value
    return shown_value(value)


def one_line(value: Any, limit: int) -> str:
    """A value on one line, cut short."""
    flat = " ".join(
        (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).split()
    )
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_names(trace: TraceRow) -> list[str]:
    """The tools a trace called, each once, in the order first called."""
    return list(dict.fromkeys(str(call.get("name") or "?") for call in trace.tool_calls))


def list_row(trace: TraceRow) -> dict[str, Any]:
    """A trace as the list shows it."""
    tools = tool_names(trace)
    return {
        "trace_id": trace.trace_id,
        "name": trace.name or f"Trace {trace.trace_id[:8]}",
        "started": moment(trace.started_at),
        "input": "" if trace.input is None else one_line(trace.input, INPUT_SHOWN_CHARS),
        "reply": "" if trace.output is None else one_line(trace.output, REPLY_SHOWN_CHARS),
        "tools": tools[:TOOLS_LISTED],
        "more_tools": max(0, len(tools) - TOOLS_LISTED),
        "calls": len(trace.tool_calls),
        "error": None if trace.error is None else one_line(trace.error, 80),
        "duration": duration(trace.duration_ms),
        "model": trace.model or "",
        "conversation_id": trace.conversation_id,
        "conversation_href": conversation_href(trace.conversation_id),
    }


def conversation_href(conversation_id: str | None) -> str | None:
    """The conversation page of a trace's conversation; None when it names none."""
    if conversation_id is None:
        return None
    return f"/traces/conversations/{quote(conversation_id, safe='')}"


def turn_rows(traces: Sequence[TraceRow]) -> list[dict[str, Any]]:
    """A conversation's traces as its page shows them, a turn each."""
    return [
        {
            "trace": trace,
            "started": moment(trace.started_at),
            "user": shown_value(trace.input),
            "tools": [str(call.get("name") or "?") for call in trace.tool_calls],
        }
        for trace in traces
    ]


def tokens(trace: TraceRow) -> str:
    """The tokens the trace's model calls took, in words."""
    usage = trace.usage or {}
    if not usage:
        return "not recorded"
    taken_in = int(usage.get("input_tokens") or 0)
    taken_out = int(usage.get("output_tokens") or 0)
    return f"{taken_in:,} in, {taken_out:,} out"


def started_ns(trace: TraceRow, spans: Sequence[Span]) -> int:
    """When the trace started, in ns: its first span's start (exact), else its summary's."""
    starts = [span.start_ns for span in spans if span.start_ns > 0]
    if starts:
        return min(starts)
    return round(trace.started_at.timestamp() * 1_000_000) * 1_000


def timeline(trace: TraceRow, spans: Sequence[Span]) -> list[dict[str, Any]]:
    """The tool calls in start order, each placed on the trace's time bar (percentages) and
    described in words for those who do not see the bar."""
    origin = started_ns(trace, spans)
    calls = sorted(
        enumerate(trace.tool_calls), key=lambda each: (each[1].get("started_ns") or 0, each[0])
    )
    placed = [(call, _offset_ms(call, origin)) for _, call in calls]
    ends = [offset + (call.get("duration_ms") or 0) for call, offset in placed]
    total = max([trace.duration_ms, 1, *ends])
    return [
        _timeline_entry(number, call, offset, total)
        for number, (call, offset) in enumerate(placed, start=1)
    ]


def _offset_ms(call: dict[str, Any], origin: int) -> float:
    start = call.get("started_ns") or 0
    return max(0.0, (start - origin) / 1_000_000) if start else 0.0


def _timeline_entry(
    number: int, call: dict[str, Any], offset_ms: float, total_ms: float
) -> dict[str, Any]:
    took = call.get("duration_ms")
    left = min(100.0, offset_ms / total_ms * 100)
    width = max(MIN_BAR_PERCENT, min(100.0 - left, (took or 0) / total_ms * 100))
    described = (
        f"Starts {duration(offset_ms)} into the trace and takes {duration(took)}, "
        f"of {duration(total_ms)} in all (from {left:.0f}% to {left + width:.0f}% of the bar)."
    )
    return {
        "number": number,
        "name": str(call.get("name") or "?"),
        "arguments": pretty(call.get("arguments")),
        "result": pretty(call.get("result")),
        "has_result": call.get("result") is not None,
        "error": call.get("error"),
        "starts": duration(offset_ms),
        "took": duration(took),
        "bar_x": f"{left:.2f}",
        "bar_width": f"{width:.2f}",
        "described": described,
    }


def span_rows(spans: Sequence[Span], origin_ns: int) -> list[dict[str, Any]]:
    """Every span as it came, with every attribute, its events and its resource."""
    return [_span_row(span, origin_ns) for span in spans]


def _span_row(span: Span, origin_ns: int) -> dict[str, Any]:
    starts = took = "not recorded"
    if span.start_ns:
        starts = duration(max(0, span.start_ns - origin_ns) / 1_000_000)
        if span.end_ns:
            took = duration(max(0, span.end_ns - span.start_ns) / 1_000_000)
    return {
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id or "",
        "name": span.name or "(no name)",
        "kind": SPAN_KINDS.get(span.kind, str(span.kind)),
        "starts": starts,
        "took": took,
        "status": _status(span),
        "attributes": _pairs(span.attributes),
        "events": [
            {"name": event.name, "attributes": shown_value(event.attributes or None)}
            for event in span.events
        ],
        "resource": _pairs(span.resource),
        "scope": span.scope,
    }


def _pairs(attributes: dict[str, Any]) -> list[tuple[str, str]]:
    return [(key, shown_value(value)) for key, value in sorted(attributes.items())]


def _status(span: Span) -> str:
    if span.status_code == STATUS_ERROR:
        return f"error: {span.status_message}" if span.status_message else "error"
    return "ok" if span.status_code == STATUS_OK else "unset"


def conversation(trace: TraceRow) -> list[dict[str, Any]]:
    """The conversation's turns: role, text, and on an assistant's turn the tools it called."""
    return [
        {
            "role": str(message.get("role") or "unknown"),
            "content": shown_value(message.get("content")),
            "tool_names": [str(name) for name in message.get("tool_names") or ()],
        }
        for message in trace.messages
    ]


def check_items(result: CaseResult) -> list[dict[str, Any]]:
    """A trace rule's check results as the check table lists them."""
    return [
        {"name": PRODUCT_NAMES.get(check.type, check.type), "check": check, "judge": None}
        for check in result.check_results
    ]
