"""OTLP trace requests written by hand, in protobuf and in JSON, for ingestion tests."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

# 2026-12-01T10:00:00Z in nanoseconds: spans start from here.
T0_NS = 1_796_119_200_000_000_000
MS = 1_000_000


def new_trace_id() -> str:
    """A random trace id, as OTLP/JSON writes it."""
    return os.urandom(16).hex()


def new_span_id() -> str:
    """A random span id, as OTLP/JSON writes it."""
    return os.urandom(8).hex()


@dataclass
class SpanSpec:
    """A span to send: ids as hex, times in ms after T0, attributes as plain values."""

    trace_id: str
    span_id: str
    name: str
    start_ms: int
    end_ms: int
    parent_span_id: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def protobuf_request(spans: list[SpanSpec], service: str = "support-bot") -> bytes:
    """An ExportTraceServiceRequest carrying the spans, serialized."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(_key_value("service.name", service))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "tests"
    for spec in spans:
        scope_spans.spans.append(_proto_span(spec))
    return request.SerializeToString()


def _proto_span(spec: SpanSpec) -> Span:
    span = Span(
        trace_id=bytes.fromhex(spec.trace_id),
        span_id=bytes.fromhex(spec.span_id),
        parent_span_id=bytes.fromhex(spec.parent_span_id),
        name=spec.name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=T0_NS + spec.start_ms * MS,
        end_time_unix_nano=T0_NS + spec.end_ms * MS,
    )
    span.attributes.extend(_key_value(key, value) for key, value in spec.attributes.items())
    if spec.error is not None:
        span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=spec.error))
    return span


def _key_value(key: str, value: Any) -> KeyValue:
    return KeyValue(key=key, value=_any_value(value))


def _any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, list):
        any_value = AnyValue()
        any_value.array_value.values.extend(_any_value(item) for item in value)
        return any_value
    return AnyValue(string_value=str(value))


def json_request(spans: list[SpanSpec], service: str = "support-bot") -> bytes:
    """The same request in OTLP/JSON: hex ids, 64-bit integers as strings."""
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": [_json_kv("service.name", service)]},
                    "scopeSpans": [
                        {"scope": {"name": "tests"}, "spans": [_json_span(s) for s in spans]}
                    ],
                }
            ]
        }
    ).encode()


def _json_span(spec: SpanSpec) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": spec.trace_id,
        "spanId": spec.span_id,
        "parentSpanId": spec.parent_span_id,
        "name": spec.name,
        "kind": 1,
        "startTimeUnixNano": str(T0_NS + spec.start_ms * MS),
        "endTimeUnixNano": str(T0_NS + spec.end_ms * MS),
        "attributes": [_json_kv(key, value) for key, value in spec.attributes.items()],
    }
    if spec.error is not None:
        span["status"] = {"code": 2, "message": spec.error}
    return span


def _json_kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": _json_value(value)}


def _json_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_json_value(item) for item in value]}}
    return {"stringValue": str(value)}


def refund_conversation(trace_id: str | None = None) -> list[SpanSpec]:
    """An agent turn in the GenAI conventions: an agent span, two model calls, two tool calls
    (the second fails), and the final reply."""
    trace_id = trace_id or new_trace_id()
    root, chat1, lookup, refund, chat2 = (new_span_id() for _ in range(5))
    user = "Please refund order 1234, it arrived broken."
    reply = "I have refunded order 1234; the money is back within 3-5 business days."
    first_output = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_1", "name": "orders.lookup",
                 "arguments": {"order_id": "1234"}},
            ],
        }
    ]  # fmt: skip
    return [
        SpanSpec(trace_id, root, "invoke_agent support-bot", 0, 900,
                 attributes={"gen_ai.operation.name": "invoke_agent",
                             "gen_ai.agent.name": "support-bot"}),
        SpanSpec(trace_id, chat1, "chat claude-sonnet-5-5", 10, 200, root,
                 attributes={
                     "gen_ai.operation.name": "chat",
                     "gen_ai.request.model": "claude-sonnet-5-5",
                     "gen_ai.input.messages": json.dumps(
                         [{"role": "user", "parts": [{"type": "text", "content": user}]}]
                     ),
                     "gen_ai.output.messages": json.dumps(first_output),
                     "gen_ai.usage.input_tokens": 120,
                     "gen_ai.usage.output_tokens": 30,
                 }),
        SpanSpec(trace_id, lookup, "execute_tool orders.lookup", 210, 300, root,
                 attributes={"gen_ai.operation.name": "execute_tool",
                             "gen_ai.tool.name": "orders.lookup",
                             "gen_ai.tool.call.id": "call_1",
                             "gen_ai.tool.call.arguments": '{"order_id": "1234"}',
                             "gen_ai.tool.call.result": '{"status": "delivered"}'}),
        SpanSpec(trace_id, refund, "execute_tool stripe.refund", 310, 400, root,
                 attributes={"gen_ai.operation.name": "execute_tool",
                             "gen_ai.tool.name": "stripe.refund",
                             "gen_ai.tool.call.id": "call_2",
                             "gen_ai.tool.call.arguments": '{"order_id": "1234"}',
                             "custom.team": "payments"},
                 error="card network timeout"),
        SpanSpec(trace_id, chat2, "chat claude-sonnet-5-5", 410, 880, root,
                 attributes={
                     "gen_ai.operation.name": "chat",
                     "gen_ai.request.model": "claude-sonnet-5-5",
                     "gen_ai.response.model": "claude-sonnet-5-5",
                     "gen_ai.input.messages": json.dumps(
                         [{"role": "user", "parts": [{"type": "text", "content": user}]}]
                     ),
                     "gen_ai.output.messages": json.dumps(
                         [{"role": "assistant", "parts": [{"type": "text", "content": reply}]}]
                     ),
                     "gen_ai.usage.input_tokens": 300,
                     "gen_ai.usage.output_tokens": 40,
                 }),
    ]  # fmt: skip
