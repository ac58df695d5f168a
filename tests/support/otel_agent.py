"""An agent instrumented with the real OpenTelemetry SDK: it reads the W3C `traceparent` the
platform sends (the SDK's own propagator), records its model call and tool call as GenAI spans
under that trace, and exports them to the platform with the SDK's own OTLP/HTTP exporter.

It speaks the agentlasso protocol on 127.0.0.1, from a thread of its own (the export is a
blocking HTTP call). An input starting `late` keeps its spans until `send_held()`: the platform
then has the result before the spans, as happens with a batching exporter.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

MODEL = "claude-sonnet-test"
ARGUMENTS = {"order": 1234}
RESULT = {"status": "paid", "refundable": True}
REPLY = "Order 1234 is paid; I have started the refund."


class HeldExporter(SpanExporter):
    """Spans kept by trace until sent: at once, or when the test says (`late` inputs)."""

    def __init__(self, otlp: SpanExporter) -> None:
        self.otlp = otlp
        self.held: list[ReadableSpan] = []
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self.lock:
            self.held.extend(spans)
        return SpanExportResult.SUCCESS

    def send(self, trace_id: int | None = None) -> None:
        """Export the held spans (of one trace, or all) to the platform."""
        with self.lock:
            chosen = [s for s in self.held if trace_id is None or s.context.trace_id == trace_id]
            self.held = [s for s in self.held if s not in chosen]
        if chosen:
            result = self.otlp.export(chosen)
            assert result is SpanExportResult.SUCCESS, "the platform took the agent's spans"

    def shutdown(self) -> None:
        self.otlp.shutdown()


class OtelAgent(ThreadingHTTPServer):
    """The instrumented agent: its URL, and the traceparents it was sent."""

    daemon_threads = True

    def __init__(self, exporter: HeldExporter, provider: TracerProvider) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.exporter = exporter
        self.tracer = provider.get_tracer("refund-agent")
        self.traceparents: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/agent"

    def send_held(self) -> None:
        """Export the spans the `late` calls kept."""
        self.exporter.send()


class _Handler(BaseHTTPRequestHandler):
    server: OtelAgent

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.server.traceparents.append(self.headers.get("traceparent", ""))
        carrier = {"traceparent": self.headers.get("traceparent", "")}
        parent = TraceContextTextMapPropagator().extract(carrier)
        tracer = self.server.tracer
        with tracer.start_as_current_span(
            "invoke_agent", context=parent, kind=SpanKind.SERVER
        ) as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            with tracer.start_as_current_span(f"chat {MODEL}") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.request.model", MODEL)
                chat.set_attribute("gen_ai.usage.input_tokens", 412)
                chat.set_attribute("gen_ai.usage.output_tokens", 37)
            with tracer.start_as_current_span("execute_tool orders.lookup") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "orders.lookup")
                tool.set_attribute("gen_ai.tool.call.arguments", json.dumps(ARGUMENTS))
                tool.set_attribute("gen_ai.tool.call.result", json.dumps(RESULT))
            trace_id = root.get_span_context().trace_id
        if not str(body.get("input", "")).startswith("late"):
            self.server.exporter.send(trace_id)
        answer = json.dumps({"output": REPLY, "tool_calls": [
            {"name": "orders.lookup", "arguments": ARGUMENTS}]}).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def running_otel_agent(platform_url: str, api_key: str) -> Iterator[OtelAgent]:
    """The agent, exporting to the platform's `/v1/traces` with the project's key."""
    otlp = OTLPSpanExporter(endpoint=f"{platform_url}/v1/traces", headers={"x-api-key": api_key})
    exporter = HeldExporter(otlp)
    provider = TracerProvider(resource=Resource.create({"service.name": "refund-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = OtelAgent(exporter, provider)
    thread = threading.Thread(target=agent.serve_forever, daemon=True)
    thread.start()
    try:
        yield agent
    finally:
        agent.shutdown()
        provider.shutdown()
