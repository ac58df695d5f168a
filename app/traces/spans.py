"""A span as decoded from OTLP (protobuf or JSON), before any dialect is read."""

from __future__ import annotations

from typing import Any

import msgspec

# OTLP's status codes.
STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2


class SpanEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event recorded on a span (an exception, an older GenAI message event, ...)."""

    name: str
    time_ns: int
    attributes: dict[str, Any] = {}


class Span(msgspec.Struct, frozen=True, kw_only=True):
    """One span. Attribute values are plain JSON values: OTLP's AnyValue unwrapped (strings,
    booleans, numbers, lists, objects; bytes as base64 text). Every attribute is kept."""

    trace_id: str  # 32 lowercase hex characters
    span_id: str  # 16 lowercase hex characters
    parent_span_id: str | None = None
    name: str = ""
    kind: int = 0
    start_ns: int = 0
    end_ns: int = 0
    status_code: int = STATUS_UNSET
    status_message: str = ""
    attributes: dict[str, Any] = {}
    events: tuple[SpanEvent, ...] = ()
    # The resource's attributes (service.name, ...) and the instrumentation scope's name.
    resource: dict[str, Any] = {}
    scope: str = ""
