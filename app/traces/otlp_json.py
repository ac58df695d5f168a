"""OTLP/JSON requests: lowerCamelCase keys, hex ids, 64-bit integers as numbers or strings.

Decoding builds an object per value, so the values are bounded before decoding (by counting
the objects the text can hold, a fast byte count) and counted exactly after.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import msgspec

from agentlasso.traces.limits import LimitExceeded, TraceLimits, ValueCounter
from agentlasso.traces.span_ids import Ids, known, refusal
from agentlasso.traces.spans import Span, SpanEvent

# An attribute nested deeper than this (a kvlist in a list in ...) is cut there: the API
# refuses what nests deeper than its limit, which is at most this.
_MAX_DEPTH = 32
# An upper bound of the objects decoding builds, per value and per span (a KeyValue, its
# AnyValue and an arrayValue or kvlistValue; a span, its status, its scope and resource).
_OBJECTS_PER_VALUE = 4
_OBJECTS_PER_SPAN = 4


class JsonError(Exception):
    """The text is not an OTLP/JSON request; the message says where."""


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
# The body's shape, for the API description (app/api/openapi_rules.py).
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


def json_ids(body: bytes, limits: TraceLimits, max_spans: int) -> Iterator[Ids]:
    """Each span's ids, lowercase, after counting every value against the limits.

    The whole request is decoded to check it, not only its ids: a request the worker could
    not read (a name that is a number, say) is refused now, never accepted and then lost.
    """
    _bound_objects(body, limits, max_spans)
    request = _json_request(body)
    counter = ValueCounter(limits)
    for resource_spans in request.resource_spans:
        resource = resource_spans.resource
        resource_values = _count_attributes(resource.attributes if resource else [], counter)
        counter.values -= resource_values  # counted with each span instead, below
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                counter.add(resource_values)  # kept with every span under the resource
                _count_span(span, counter)
                yield span.trace_id.lower(), span.span_id.lower(), span.parent_span_id.lower()


def json_spans(body: bytes) -> Iterator[Span]:
    """Every span `json_ids` accepted, decoded in full."""
    for resource_spans in _json_request(body).resource_spans:
        resource = resource_spans.resource
        resource_attributes = _json_attributes(resource.attributes if resource else [])
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name if scope_spans.scope else ""
            for span in scope_spans.spans:
                ids = span.trace_id.lower(), span.span_id.lower(), span.parent_span_id.lower()
                if refusal(*ids) is None:
                    yield _json_span(span, resource_attributes, scope)


def _bound_objects(body: bytes, limits: TraceLimits, max_spans: int) -> None:
    """Refuse a text that could make decoding build more objects than the limits allow.

    Every value is a JSON object, so the braces bound what decoding builds; braces inside text
    count too, which only a text made mostly of braces would notice.
    """
    bound = _OBJECTS_PER_VALUE * limits.values_per_request + _OBJECTS_PER_SPAN * max_spans
    objects = body.count(b"{")
    if objects > bound:
        raise LimitExceeded(
            f"a request may hold at most {limits.values_per_request} values "
            f"(AGENTLASSO_TRACE_MAX_VALUES_PER_REQUEST); this one has {objects} JSON objects, "
            f"more than that many values could take"
        )


def _json_request(body: bytes) -> _JsonRequest:
    try:
        return _json_decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise JsonError(f"the body is not an OTLP/JSON request: {exc}") from exc
    except RecursionError:
        raise LimitExceeded("the body nests too deeply to be read", too_deep=True) from None


def _count_span(span: _JsonSpan, counter: ValueCounter) -> None:
    _count_attributes(span.attributes, counter)
    for event in span.events:
        counter.add(1)
        _count_attributes(event.attributes, counter)


def _count_attributes(pairs: Sequence[_JsonKeyValue], counter: ValueCounter) -> int:
    """Count a span's (event's, resource's) attributes; the values they hold."""
    counter.attributes(len(pairs))
    before = counter.values
    for pair in pairs:
        start = counter.values
        counter.add(1)
        _count_value(pair.value, counter, 1, start)
    return counter.values - before


def _count_value(value: _JsonValue | None, counter: ValueCounter, depth: int, start: int) -> None:
    if value is None:
        return
    if value.array_value is not None:
        items: Sequence[_JsonValue | None] = value.array_value.values
    elif value.kvlist_value is not None:
        items = [pair.value for pair in value.kvlist_value.values]
    else:
        return
    counter.depth(depth)
    for item in items:
        counter.add(1)
        counter.attribute(counter.values - start)
        _count_value(item, counter, depth + 1, start)


def _json_span(span: _JsonSpan, resource: dict[str, Any], scope: str) -> Span:
    status = span.status or _JsonStatus()
    return Span(
        trace_id=span.trace_id.lower(),
        span_id=span.span_id.lower(),
        parent_span_id=span.parent_span_id.lower() or None,
        name=span.name,
        kind=known(_enum_number(span.kind, _KIND_NAMES), "kind"),
        start_ns=_int(span.start_time_unix_nano),
        end_ns=_int(span.end_time_unix_nano),
        status_code=known(_enum_number(status.code, _STATUS_NAMES), "status"),
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
