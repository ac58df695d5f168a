"""Which spans can be stored: their ids, whatever the encoding, and OTLP's known enums."""

from __future__ import annotations

from typing import Literal

Ids = tuple[str, str, str]

_HEX_DIGITS = "0123456789abcdef"
# The span kinds and status codes OTLP defines; any other number is read as unspecified.
_KNOWN = {"kind": range(6), "status": range(3)}


def refusal(trace_id: str, span_id: str, parent_id: str) -> str | None:
    """Why a span cannot be stored, or None. Ids are lowercase hex here, whatever the wire."""
    if len(trace_id) != 32 or trace_id.strip("0") == "" or not _is_hex(trace_id):
        return "traceId must be 16 bytes (32 hex characters), not all zero"
    if len(span_id) != 16 or span_id.strip("0") == "" or not _is_hex(span_id):
        return "spanId must be 8 bytes (16 hex characters), not all zero"
    if parent_id and (len(parent_id) != 16 or not _is_hex(parent_id)):
        return "parentSpanId must be empty or 8 bytes (16 hex characters)"
    return None


def known(number: int, enum: Literal["kind", "status"]) -> int:
    """An enum's number, or 0 (unspecified) for one OTLP does not define."""
    return number if number in _KNOWN[enum] else 0


def _is_hex(text: str) -> bool:
    return not text.strip(_HEX_DIGITS)
