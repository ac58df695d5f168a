"""OTLP/HTTP trace requests, protobuf or JSON: checked cheaply on arrival, decoded in full later.

The API only checks a request (it parses, counts the spans and finds the ones to refuse), so
ingestion never waits on reading attributes; a worker decodes the stored request into `Span`s.
Both use `_refusal`, so the spans a client was told were rejected are the ones never stored.
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

from app.traces.spans import Span, SpanEvent

# A rejection message names at most this many spans; the count covers them all.
_NAMED_REJECTIONS = 10
# An attribute nested deeper than this (a kvlist in a list in ...) is cut there.
_MAX_DEPTH = 16
_HEX_DIGITS = "0123456789abcdef"
# The span kinds and status codes OTLP defines; any other number is read as unspecified.
_KINDS = range(6)
_STATUSES = range(3)


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


def decompressed(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    """The body with gzip undone, never more than max_bytes (a small bomb stays small)."""
    coding = (content_encoding or "identity").strip().lower()
    if coding in ("", "identity"):
        if len(body) > max_bytes:
            raise OtlpTooLarge(f"the body is over {max_bytes} bytes")
        return body
    if coding != "gzip":
        raise OtlpError("Content-Encoding must be gzip or absent")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        plain = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise OtlpError("the body is not valid gzip") from exc
    if len(plain) > max_bytes or inflater.unconsumed_tail:
        raise OtlpTooLarge(f"the body is over {max_bytes} bytes once decompressed")
    if not inflater.eof:
        raise OtlpError("the gzip body is cut short")
    return plain


def check(body: bytes, encoding: Encoding) -> Intake:
    """Count a request's spans and find the ones to refuse, reading nothing else."""
    ids = _proto_ids(body) if encoding is Encoding.PROTOBUF else _json_ids(body)
    rejections = []
    count = 0
    for position, (trace_id, span_id, parent_id) in enumerate(ids):
        count = position + 1
        reason = _refusal(trace_id, span_id, parent_id)
        if reason is not None:
            rejections.append(Rejection(position, reason))
    return Intake(count, tuple(rejections))


def decode(body: bytes, encoding: Encoding) -> list[Span]:
    """Every span a request holds that `check` accepted, decoded in full."""
    if encoding is Encoding.PROTOBUF:
        return list(_proto_spans(_proto_request(body)))
    return list(_json_spans(_json_request(body)))


def _refusal(trace_id: str, span_id: str, parent_id: str) -> str | None:
    """Why a span cannot be stored, or None. Ids are lowercase hex here, whatever the wire."""
    if len(trace_id) != 32 or trace_id.strip("0") == "" or not _is_hex(trace_id):
        return "traceId must be 16 bytes (32 hex characters), not all zero"
    if len(span_id) != 16 or span_id.strip("0") == "" or not _is_hex(span_id):
        return "spanId must be 8 bytes (16 hex characters), not all zero"
    if parent_id and (len(parent_id) != 16 or not _is_hex(parent_id)):
        return "parentSpanId must be empty or 8 bytes (16 hex characters)"
    return None


def _is_hex(text: str) -> bool:
    return not text.strip(_HEX_DIGITS)


# --- protobuf ---------------------------------------------------------------------------------


def _proto_request(body: bytes) -> ExportTraceServiceRequest:
    try:
        request: ExportTraceServiceRequest = ExportTraceServiceRequest.FromString(body)
        return request
    except (ProtobufDecodeError, RuntimeError, ValueError) as exc:
        raise OtlpError("the body is not an OTLP ExportTraceServiceRequest (protobuf)") from exc


def _proto_ids(body: bytes) -> Iterator[tuple[str, str, str]]:
    request = _proto_request(body)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex()


def _proto_spans(request: ExportTraceServiceRequest) -> Iterator[Span]:
    for resource_spans in request.resource_spans:
        resource = _proto_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                ids = span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex()
                if _refusal(*ids) is None:
                    yield _proto_span(span, resource, scope)


def _proto_span(span: ProtoSpan, resource: dict[str, Any], scope: str) -> Span:
    return Span(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex() or None,
        name=span.name,
        kind=_known(span.kind, _KINDS),
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        status_code=_known(span.status.code, _STATUSES),
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


# --- JSON (OTLP/JSON: lowerCamelCase keys, hex ids, 64-bit integers as numbers or strings) ----


class _JsonValue(msgspec.Struct, rename="camel"):
    string_value: str | None = None
    bool_value: bool | None = None
    int_value: int | str | None = None
    double_value: float | str | None = None
    bytes_value: str | None = None
    array_value: _JsonArray | None = None
    kvlist_value: _JsonKvList | None = None


class _JsonKeyValue(msgspec.Struct, rename="camel"):
    key: str
    value: _JsonValue | None = None


class _JsonArray(msgspec.Struct, rename="camel"):
    values: list[_JsonValue] = []


class _JsonKvList(msgspec.Struct, rename="camel"):
    values: list[_JsonKeyValue] = []


class _JsonEvent(msgspec.Struct, rename="camel"):
    time_unix_nano: int | str = 0
    name: str = ""
    attributes: list[_JsonKeyValue] = []


class _JsonStatus(msgspec.Struct, rename="camel"):
    code: int | str = 0
    message: str = ""


class _JsonSpan(msgspec.Struct, rename="camel"):
    trace_id: str = ""
    span_id: str = ""
    parent_span_id: str = ""
    name: str = ""
    kind: int | str = 0
    start_time_unix_nano: int | str = 0
    end_time_unix_nano: int | str = 0
    attributes: list[_JsonKeyValue] = []
    events: list[_JsonEvent] = []
    status: _JsonStatus | None = None


class _JsonScope(msgspec.Struct, rename="camel"):
    name: str = ""


class _JsonScopeSpans(msgspec.Struct, rename="camel"):
    scope: _JsonScope | None = None
    spans: list[_JsonSpan] = []


class _JsonResource(msgspec.Struct, rename="camel"):
    attributes: list[_JsonKeyValue] = []


class _JsonResourceSpans(msgspec.Struct, rename="camel"):
    resource: _JsonResource | None = None
    scope_spans: list[_JsonScopeSpans] = []


class _JsonRequest(msgspec.Struct, rename="camel"):
    resource_spans: list[_JsonResourceSpans] = []


_json_decoder = msgspec.json.Decoder(_JsonRequest)
# The OTLP/JSON request as this decoder reads it: the API's description is made from it.
OTLP_JSON_REQUEST = _JsonRequest
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_KIND_NAMES = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}


def _json_ids(body: bytes) -> Iterator[tuple[str, str, str]]:
    # The whole request is decoded to check it, not only its ids: a request the worker could
    # not read (a name that is a number, say) is refused now, never accepted and then lost.
    request = _json_request(body)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield span.trace_id.lower(), span.span_id.lower(), span.parent_span_id.lower()


def _json_request(body: bytes) -> _JsonRequest:
    try:
        return _json_decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise OtlpError(f"the body is not an OTLP/JSON request: {exc}") from exc


def _json_spans(request: _JsonRequest) -> Iterator[Span]:
    for resource_spans in request.resource_spans:
        resource = resource_spans.resource
        resource_attributes = _json_attributes(resource.attributes if resource else [])
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name if scope_spans.scope else ""
            for span in scope_spans.spans:
                ids = span.trace_id.lower(), span.span_id.lower(), span.parent_span_id.lower()
                if _refusal(*ids) is None:
                    yield _json_span(span, resource_attributes, scope)


def _json_span(span: _JsonSpan, resource: dict[str, Any], scope: str) -> Span:
    status = span.status or _JsonStatus()
    return Span(
        trace_id=span.trace_id.lower(),
        span_id=span.span_id.lower(),
        parent_span_id=span.parent_span_id.lower() or None,
        name=span.name,
        kind=_known(_enum_number(span.kind, _KIND_NAMES), _KINDS),
        start_ns=_int(span.start_time_unix_nano),
        end_ns=_int(span.end_time_unix_nano),
        status_code=_known(_enum_number(status.code, _STATUS_NAMES), _STATUSES),
        status_message=status.message,
        attributes=_json_attributes(span.attributes),
        events=tuple(
            SpanEvent(
                name=event.name,
                time_ns=_int(event.time_unix_nano),
                attributes=_json_attributes(event.attributes),
            )
            for event in span.events
        ),
        resource=resource,
        scope=scope,
    )


def _json_attributes(pairs: Iterable[_JsonKeyValue], depth: int = 0) -> dict[str, Any]:
    return {pair.key: _json_value(pair.value, depth) for pair in pairs}


def _json_value(value: _JsonValue | None, depth: int) -> Any:
    if value is None or depth > _MAX_DEPTH:
        return None
    if value.string_value is not None:
        return value.string_value
    if value.bool_value is not None:
        return value.bool_value
    if value.int_value is not None:
        return _int(value.int_value)
    if value.double_value is not None:
        return _float(value.double_value)
    if value.array_value is not None:
        return [_json_value(item, depth + 1) for item in value.array_value.values]
    if value.kvlist_value is not None:
        return _json_attributes(value.kvlist_value.values, depth + 1)
    return value.bytes_value


def _known(number: int, known: range) -> int:
    """An enum's number, or 0 (unspecified) for one OTLP does not define."""
    return number if number in known else 0


def _int(value: int | str) -> int:
    """OTLP/JSON writes 64-bit integers as numbers or as decimal strings."""
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        return 0


def _float(value: float | str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _enum_number(value: int | str, names: dict[str, int]) -> int:
    """An enum as its number; OTLP/JSON requires numbers, but names are read too."""
    if isinstance(value, int):
        return value
    return names.get(value, _int(value))
