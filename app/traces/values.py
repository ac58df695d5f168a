"""Attribute values read leniently: instrumentations disagree on types, so nothing here raises."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import msgspec

from agentlasso.domain.json_nesting import too_deep

# Python refuses to print integers past 4300 digits; nothing sensible is that long anyway.
_LARGEST_SHOWN = 10**18


def text_or_none(value: Any) -> str | None:
    """The value as text when it is text or a number, else None."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value):
        return str(value)
    if isinstance(value, int) and abs(value) < _LARGEST_SHOWN:
        return str(value)
    return None


def count_or_none(value: Any) -> int | None:
    """The value as a count (a non-negative whole number, possibly written as text), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
        return int(value) if _is_small_number(value) else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0:
        return int(value)
    if isinstance(value, int) and value >= 0:
        return value
    return None


def _is_small_number(text: str) -> bool:
    """Whether the text is digits short enough for int() (Python refuses huge ones)."""
    return text.isascii() and text.isdigit() and len(text) < 19


def decoded_json(text: str) -> tuple[bool, Any]:
    """(True, the value) when the text is JSON, else (False, None): nested too deeply, it is
    kept as text."""
    if too_deep(text) is not None:
        return False, None
    try:
        return True, msgspec.json.decode(text)
    except (msgspec.DecodeError, ValueError):
        return False, None


def structure_or_text(value: Any) -> Any:
    """Text holding a JSON object or array decoded, anything else as it was.

    Only structures are decoded: a tool result of "42" or "true" was most likely meant as text.
    """
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        ok, decoded = decoded_json(value)
        if ok and isinstance(decoded, dict | list):
            return decoded
    return value


def json_or_text(value: Any) -> Any:
    """Text decoded as JSON when it is JSON (any value), else as it was."""
    if isinstance(value, str):
        ok, decoded = decoded_json(value)
        if ok:
            return decoded
    return value


def structure(value: Any) -> Any:
    """A list or object, given as one or as JSON text, else None."""
    value = structure_or_text(value)
    return value if isinstance(value, dict | list) else None


def json_text(value: Any) -> str:
    """The value as display text: text as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        pass
    try:
        return str(value)
    except ValueError:  # an integer too long to print
        return ""


def indexed_groups(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened `prefix.N.rest` attributes grouped by N, in index order, as {rest: value}."""
    groups: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attributes.items():
        if not isinstance(key, str) or not key.startswith(head):
            continue
        index, _, rest = key[len(head) :].partition(".")
        if rest and _is_small_number(index):
            groups.setdefault(int(index), {})[rest] = value
    return [groups[index] for index in sorted(groups)]
