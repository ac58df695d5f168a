"""Production traces for trace rules, made by the real OpenTelemetry SDK: a support agent's
turns (its question, the tools it called, its reply) exported over OTLP/HTTP in protobuf, as a
deployed agent would. A span may also be sent late, into a trace exported earlier."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
    set_span_in_context,
)


@contextmanager
def production_tracer(
    platform_url: str, api_key: str, service: str = "support-bot", *, held: bool = False
) -> Iterator[Tracer]:
    """A tracer exporting every span as it ends to the platform's /v1/traces; or, `held`,
    every span of the block in one request at its end (as a batching exporter may)."""
    exporter = OTLPSpanExporter(
        endpoint=f"{platform_url}/v1/traces", headers={"authorization": f"Bearer {api_key}"}
    )
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(
        BatchSpanProcessor(exporter, schedule_delay_millis=600_000, max_export_batch_size=2048,
                           max_queue_size=4096)
        if held
        else SimpleSpanProcessor(exporter)
    )  # fmt: skip
    try:
        yield provider.get_tracer(service)
    finally:
        provider.force_flush()
        provider.shutdown()


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def agent_turn(
    tracer: Tracer,
    question: str,
    reply: str,
    tools: Sequence[str] = (),
    *,
    error: str | None = None,
    name: str = "invoke_agent support-bot",
    conversation_id: str | None = None,
) -> str:
    """One turn of the agent, as the GenAI conventions record it (a turn of the conversation
    `conversation_id`, when given); its trace id."""
    with tracer.start_as_current_span(name) as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        if conversation_id is not None:
            root.set_attribute("gen_ai.conversation.id", conversation_id)
        with tracer.start_as_current_span("chat claude") as chat:
            chat.set_attributes({
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "claude-sonnet-5-5",
                "gen_ai.input.messages": _messages("user", question),
            })  # fmt: skip
        for tool in tools:
            tool_span(tracer, tool)
        with tracer.start_as_current_span("chat claude") as chat:
            chat.set_attributes({
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": _messages("assistant", reply),
            })  # fmt: skip
            if error is not None:
                chat.set_status(Status(StatusCode.ERROR, error))
        return format(root.get_span_context().trace_id, "032x")


def tool_span(tracer: Tracer, tool: str) -> None:
    """A tool call of the current trace."""
    with tracer.start_as_current_span(f"execute_tool {tool}") as span:
        span.set_attributes({
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.arguments": '{"order_id": 77}',
        })  # fmt: skip


def late_tool_span(tracer: Tracer, trace_id: str, tool: str) -> None:
    """A tool call's span sent on its own, after the trace it belongs to was exported."""
    parent = SpanContext(
        trace_id=int(trace_id, 16), span_id=0x1A2B3C4D5E6F7081, is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )  # fmt: skip
    context = set_span_in_context(NonRecordingSpan(parent))
    with tracer.start_as_current_span(f"execute_tool {tool}", context=context) as span:
        span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool})
