"""The real OpenTelemetry SDK exporting an agent's GenAI spans to a running `agentlasso api`
process, read by a real worker process: in protobuf (the SDK's own OTLP/HTTP exporter, gzip)
and in OTLP/JSON (the SDK's spans, encoded by its own encoder, written as OTLP/JSON)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode, Tracer

from agentlasso.domain.scopes import Scope
from tests.support.databases import key_of_scope, new_project_key
from tests.support.processes import WorkerProcesses
from tests.support.waiting import eventually

QUESTION = "Where is my order 77? It was due on Monday."
REPLY = "Order 77 left the warehouse on Tuesday; it arrives Thursday."


class OtlpJsonExporter(SpanExporter):
    """The SDK's spans as OTLP/JSON: its own protobuf encoding, with hex ids as OTLP/JSON has
    them (protobuf's JSON mapping would write bytes as base64)."""

    def __init__(self, endpoint: str, headers: dict[str, str]) -> None:
        self.endpoint = endpoint
        self.headers = {**headers, "content-type": "application/json"}
        self.answers: list[httpx.Response] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        request = MessageToDict(encode_spans(spans))
        for resource_spans in request.get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                for span in scope_spans.get("spans", []):
                    _ids_as_hex(span)
        answer = httpx.post(self.endpoint, content=json.dumps(request), headers=self.headers)
        self.answers.append(answer)
        return SpanExportResult.SUCCESS if answer.is_success else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        """Nothing to close."""


def _ids_as_hex(span: dict[str, Any]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if span.get(key):
            span[key] = base64.b64decode(span[key]).hex()


@contextmanager
def tracer_exporting_to(exporter: SpanExporter) -> Iterator[Tracer]:
    """A tracer of its own provider, flushed and shut down at the end."""
    provider = TracerProvider(resource=Resource.create({"service.name": "order-bot"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
    try:
        yield provider.get_tracer("order-bot")
    finally:
        provider.force_flush()
        provider.shutdown()


def agent_turn(tracer: Tracer) -> str:
    """One conversation, instrumented as the GenAI conventions say; its trace id."""
    with tracer.start_as_current_span("invoke_agent order-bot") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("chat claude-sonnet-5-5") as chat:
            chat.set_attributes({
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "claude-sonnet-5-5",
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
                ),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "tool_call", "id": "c1", "name": "orders.track",
                     "arguments": {"order_id": 77}},
                ]}]),
                "gen_ai.usage.input_tokens": 200,
                "gen_ai.usage.output_tokens": 20,
            })  # fmt: skip
        with tracer.start_as_current_span("execute_tool orders.track") as tool:
            tool.set_attributes({
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "orders.track",
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.call.arguments": '{"order_id": 77}',
                "gen_ai.tool.call.result": '{"shipped": "Tuesday"}',
            })  # fmt: skip
        with tracer.start_as_current_span("execute_tool notify.customer") as failing:
            failing.set_attribute("gen_ai.operation.name", "execute_tool")
            failing.set_attribute("gen_ai.tool.name", "notify.customer")
            failing.set_status(Status(StatusCode.ERROR, "SMS gateway refused"))
        with tracer.start_as_current_span("chat claude-sonnet-5-5") as chat:
            chat.set_attributes({
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "claude-sonnet-5-5",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": REPLY}]}]
                ),
                "gen_ai.usage.input_tokens": 260,
                "gen_ai.usage.output_tokens": 25,
            })  # fmt: skip
        return format(root.get_span_context().trace_id, "032x")


async def read_trace(url: str, key: str, trace_id: str, spans: int) -> dict[str, Any]:
    """The trace once all its spans have been read by a worker."""
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": key}) as client:

        async def whole() -> dict[str, Any] | None:
            response = await client.get(f"/api/v1/traces/{trace_id}")
            if response.status_code == 404:
                return None
            trace: dict[str, Any] = response.json()
            return trace if trace["span_count"] == spans else None

        return await eventually(whole, timeout_s=30)


def assert_read_as_the_agent_did(trace: dict[str, Any]) -> None:
    assert trace["name"] == "invoke_agent order-bot"
    assert trace["input"] == QUESTION
    assert trace["output"] == REPLY
    calls = trace["tool_calls"]
    assert [call["name"] for call in calls] == ["orders.track", "notify.customer"]
    assert calls[0]["arguments"] == {"order_id": 77}
    assert calls[0]["result"] == {"shipped": "Tuesday"}
    assert calls[1]["error"] == "SMS gateway refused"
    assert trace["usage"] == {"input_tokens": 460, "output_tokens": 45}
    assert trace["model"] == "claude-sonnet-5-5"
    assert trace["error"] == "SMS gateway refused"


async def test_the_sdk_exporter_in_protobuf_makes_a_trace_a_worker_reads(
    api_process_url: str, database_url: str, workers: WorkerProcesses
) -> None:
    workers.start()
    key = await new_project_key(database_url)
    exporter = OTLPSpanExporter(
        endpoint=f"{api_process_url}/v1/traces",
        headers={"authorization": f"Bearer {key}"},
        compression=Compression.Gzip,
    )
    with tracer_exporting_to(exporter) as tracer:
        trace_id = agent_turn(tracer)
    assert_read_as_the_agent_did(await read_trace(api_process_url, key, trace_id, spans=5))


async def test_the_sdk_spans_in_otlp_json_make_the_same_trace(
    api_process_url: str, database_url: str, workers: WorkerProcesses
) -> None:
    workers.start()
    key = await new_project_key(database_url)
    exporter = OtlpJsonExporter(f"{api_process_url}/api/v1/traces/otlp", {"x-api-key": key})
    with tracer_exporting_to(exporter) as tracer:
        trace_id = agent_turn(tracer)
    assert exporter.answers, "the SDK exported"
    assert all(answer.status_code == 200 for answer in exporter.answers)
    assert all(answer.json() == {} for answer in exporter.answers)
    assert_read_as_the_agent_did(await read_trace(api_process_url, key, trace_id, spans=5))


async def test_an_ingest_key_exports_and_reads_nothing_back(
    api_process_url: str, database_url: str, workers: WorkerProcesses
) -> None:
    workers.start()
    key = await new_project_key(database_url)
    ingest = await key_of_scope(database_url, key, Scope.INGEST)
    exporter = OTLPSpanExporter(
        endpoint=f"{api_process_url}/v1/traces", headers={"authorization": f"Bearer {ingest}"}
    )
    with tracer_exporting_to(exporter) as tracer:
        trace_id = agent_turn(tracer)
    assert_read_as_the_agent_did(await read_trace(api_process_url, key, trace_id, spans=5))
    async with httpx.AsyncClient(base_url=api_process_url, headers={"x-api-key": ingest}) as http:
        refused = await http.get(f"/api/v1/traces/{trace_id}")
    assert refused.status_code == 403
    assert (
        refused.json()["detail"] == 'This key\'s scope is "ingest"; reading a trace needs "read".'
    )
