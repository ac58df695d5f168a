"""The agent's own spans of one call, as a case card shows them beside the reply (contract
section 14): its tool calls (with arguments and results) and model calls (with tokens), each on
a bar of the whole trace. Nothing here does I/O."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentlasso.traces.spans import STATUS_ERROR, Span
from agentlasso.web.trace_views import MIN_BAR_PERCENT, duration, pretty

# The span attributes that say what a step is (OpenTelemetry GenAI, then OpenInference).
_MODEL_OPERATIONS = {"chat", "text_completion", "generate_content"}
_TOOL_OPERATIONS = {"execute_tool"}


def agent_steps(spans: Sequence[Span]) -> list[dict[str, Any]]:
    """The trace's tool and model spans in start order, each placed on the trace's bar."""
    if not spans:
        return []
    origin = min(span.start_ns for span in spans)
    total_ns = max(max(span.end_ns for span in spans) - origin, 1)
    steps = [step for span in spans if (step := _step(span, origin, total_ns)) is not None]
    return [{**step, "number": number} for number, step in enumerate(steps, start=1)]


def _step(span: Span, origin: int, total_ns: int) -> dict[str, Any] | None:
    kind = _kind(span.attributes)
    if kind is None:
        return None
    left = min(100.0, (span.start_ns - origin) / total_ns * 100)
    width = max(MIN_BAR_PERCENT, min(100.0 - left, (span.end_ns - span.start_ns) / total_ns * 100))
    took = duration((span.end_ns - span.start_ns) / 1_000_000)
    starts = duration((span.start_ns - origin) / 1_000_000)
    what = _tool(span) if kind == "tool" else _model(span)
    return {
        "kind": kind, "name": what["name"], "took": took, "starts": starts,
        "bar_x": f"{left:.2f}", "bar_width": f"{width:.2f}",
        "described": f"{what['name']}: starts {starts} into the trace and takes {took} "
        f"(from {left:.0f}% to {left + width:.0f}% of the bar).",
        "error": span.status_message if span.status_code == STATUS_ERROR else None,
        **what,
    }  # fmt: skip


def _kind(attributes: dict[str, Any]) -> str | None:
    operation = attributes.get("gen_ai.operation.name")
    inference = str(attributes.get("openinference.span.kind", "")).upper()
    if operation in _TOOL_OPERATIONS or "gen_ai.tool.name" in attributes or inference == "TOOL":
        return "tool"
    if operation in _MODEL_OPERATIONS or inference == "LLM":
        return "model"
    return None


def _tool(span: Span) -> dict[str, Any]:
    attributes = span.attributes
    name = attributes.get("gen_ai.tool.name") or attributes.get("tool.name") or span.name
    arguments = attributes.get("gen_ai.tool.call.arguments", attributes.get("input.value"))
    result = attributes.get("gen_ai.tool.call.result", attributes.get("output.value"))
    return {
        "name": str(name),
        "arguments": None if arguments is None else pretty(arguments),
        "result": None if result is None else pretty(result),
        "tokens": None,
    }


def _model(span: Span) -> dict[str, Any]:
    attributes = span.attributes
    model = attributes.get("gen_ai.request.model") or attributes.get("llm.model_name")
    tokens_in = attributes.get(
        "gen_ai.usage.input_tokens", attributes.get("llm.token_count.prompt")
    )
    tokens_out = attributes.get(
        "gen_ai.usage.output_tokens", attributes.get("llm.token_count.completion")
    )
    tokens = (
        f"{tokens_in or 0:,} tokens in, {tokens_out or 0:,} out"
        if tokens_in is not None or tokens_out is not None
        else None
    )
    return {"name": str(model or span.name), "tokens": tokens, "arguments": None, "result": None}
