"""OTLP/HTTP trace requests, protobuf or JSON: checked cheaply on arrival, decoded in full later.

The API only checks a request (it counts the values and the spans against the limits, and
finds the spans to refuse), so ingestion never waits on reading attributes; a worker decodes
the stored request into `Span`s. Both use `refusal`, so the spans a client was told were
rejected are the ones never stored.
"""

from __future__ import annotations

import base64
import enum
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from agentlasso.traces.limits import LimitExceeded, TraceLimits, ValueCounter
from agentlasso.traces.otlp_json import JsonError, json_ids, json_spans
from agentlasso.traces.proto_wire import WireError, span_ids
from agentlasso.traces.span_ids import Ids, known, refusal
from agentlasso.traces.spans import Span, SpanEvent

# A rejection message names at most this many spans; the count covers them all.
_NAMED_REJECTIONS = 10
# An attribute nested deeper than this (a kvlist in a list in ...) is cut there: the API
# refuses what nests deeper than its limit, which is at most this.
_MAX_DEPTH = 32


class Encoding(enum.StrEnum):
    """How a request's body is written: OTLP's two content types."""

    PROTOBUF = "protobuf"
    JSON = "json"


class OtlpError(Exception):
    """A request that cannot be read at all: the message says why, for a 400."""


class OtlpTooLarge(OtlpError):
    """A request over the size limit, compressed or once decompressed."""


class Rejection(msgspec.Struct, frozen=True):
    """One span refused, by its position in the request."""

    position: int
    reason: str


class Intake(msgspec.Struct, frozen=True):
    """What a request holds, as far as accepting it goes."""

    span_count: int
    rejections: tuple[Rejection, ...] = ()

    @property
    def accepted(self) -> int:
        """How many spans will be stored."""
        return self.span_count - len(self.rejections)

    def rejection_message(self) -> str:
        """OTLP's partial-success error message, naming the first refused spans."""
        named = "; ".join(
            f"span {each.position}: {each.reason}" for each in self.rejections[:_NAMED_REJECTIONS]
        )
        more = len(self.rejections) - _NAMED_REJECTIONS
        return named + (f"; and {more} more" if more > 0 else "")


def encoding_of(content_type: str | None) -> Encoding:
    """The encoding a Content-Type names, or an OtlpError naming the two it may be."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type == "application/x-protobuf":
        return Encoding.PROTOBUF
    if media_type == "application/json":
        return Encoding.JSON
    raise OtlpError("Content-Type must be application/x-protobuf or application/json")


def decompressed(
    body: bytes, content_encoding: str | None, max_bytes: int, setting: str = ""
) -> bytes:
    """The body with gzip undone, never more than max_bytes (a small bomb stays small)."""
    named = f" ({setting})" if setting else ""
    coding = (content_encoding or "identity").strip().lower()
    if coding in ("", "identity"):
        if len(body) > max_bytes:
            raise OtlpTooLarge(f"the body is over {max_bytes} bytes{named}")
        return body
    if coding != "gzip":
        raise OtlpError("Content-Encoding must be gzip or absent")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        plain = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise OtlpError("the body is not valid gzip") from exc
    if len(plain) > max_bytes or inflater.unconsumed_tail:
        raise OtlpTooLarge(f"the body is over {max_bytes} bytes once decompressed{named}")
    if not inflater.eof:
        raise OtlpError("the gzip body is cut short")
    return plain


def check(body: bytes, encoding: Encoding, limits: TraceLimits, max_spans: int) -> Intake:
    """Count a request's values and spans and find the spans to refuse, reading nothing else;
    LimitExceeded naming the first limit passed."""
    ids = (
        _proto_ids(body, limits, max_spans)
        if encoding is Encoding.PROTOBUF
        else iter(_json_ids(body, limits, max_spans))
    )
    rejections = []
    count = 0
    for position, (trace_id, span_id, parent_id) in enumerate(ids):
        count = position + 1
        if count > max_spans:  # before reading further: the spans past the limit cost too
            raise LimitExceeded(
                f"a request may carry at most {max_spans} spans (AGENTLASSO_TRACE_MAX_SPANS_PER_"
                f"REQUEST); this one has at least {count}. Send smaller batches (the SDK's "
                f"max_export_batch_size)"
            )
        reason = refusal(trace_id, span_id, parent_id)
        if reason is not None:
            rejections.append(Rejection(position, reason))
    return Intake(count, tuple(rejections))


def decode(body: bytes, encoding: Encoding) -> list[Span]:
    """Every span a request holds that `check` accepted, decoded in full."""
    if encoding is Encoding.PROTOBUF:
        return list(_proto_spans(_proto_request(body)))
    try:
        return list(json_spans(body))
    except JsonError as exc:
        raise OtlpError(str(exc)) from exc


def _json_ids(body: bytes, limits: TraceLimits, max_spans: int) -> list[Ids]:
    try:
        return list(json_ids(body, limits, max_spans))
    except JsonError as exc:
        raise OtlpError(str(exc)) from exc


# --- protobuf ---------------------------------------------------------------------------------


def _proto_request(body: bytes) -> ExportTraceServiceRequest:
    try:
        request: ExportTraceServiceRequest = ExportTraceServiceRequest.FromString(body)
        return request
    except (ProtobufDecodeError, RuntimeError, ValueError) as exc:
        raise OtlpError("the body is not an OTLP ExportTraceServiceRequest (protobuf)") from exc


def _proto_ids(body: bytes, limits: TraceLimits, max_spans: int) -> Iterator[Ids]:
    """The spans' ids, counted on the wire first; parsed then, once the counts are bounded, so
    that what the worker could not parse is refused now."""
    try:
        for position, ids in enumerate(span_ids(body, ValueCounter(limits))):
            yield ids
            if position >= max_spans:
                return
    except WireError as exc:
        raise OtlpError("the body is not an OTLP ExportTraceServiceRequest (protobuf)") from exc
    _proto_request(body)


def _proto_spans(request: ExportTraceServiceRequest) -> Iterator[Span]:
    for resource_spans in request.resource_spans:
        resource = _proto_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                ids = span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex()
                if refusal(*ids) is None:
                    yield _proto_span(span, resource, scope)


def _proto_span(span: ProtoSpan, resource: dict[str, Any], scope: str) -> Span:
    return Span(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex() or None,
        name=span.name,
        kind=known(span.kind, "kind"),
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        status_code=known(span.status.code, "status"),
        status_message=span.status.message,
        attributes=_proto_attributes(span.attributes),
        events=tuple(
            SpanEvent(
                name=event.name,
                time_ns=event.time_unix_nano,
                attributes=_proto_attributes(event.attributes),
            )
            for event in span.events
        ),
        resource=resource,
        scope=scope,
    )


def _proto_attributes(pairs: Iterable[KeyValue], depth: int = 0) -> dict[str, Any]:
    return {pair.key: _proto_value(pair.value, depth) for pair in pairs}


def _proto_value(value: AnyValue, depth: int) -> Any:
    kind = value.WhichOneof("value")
    if kind is None or depth > _MAX_DEPTH:
        return None
    if kind == "array_value":
        return [_proto_value(item, depth + 1) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _proto_attributes(value.kvlist_value.values, depth + 1)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)
