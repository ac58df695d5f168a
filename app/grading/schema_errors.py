"""JSON Schema errors in words a person reads: where (`$.items[2].price`) and what, excerpted."""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from itertools import accumulate
from typing import Any

import jsonschema_rs
import msgspec

from agentlasso.grading.excerpts import ELLIPSIS, count_noun, one_line, shorten

# Longest value (a string, an object) quoted in a detail; the reply is never echoed whole.
VALUE_CHARS = 80
# Longest message after the location; a library message can quote a whole enum.
MESSAGE_CHARS = 300
# Longest location: a path through deep nesting keeps its start and its end.
LOCATION_CHARS = 120
# Longest object key shown in a location.
KEY_CHARS = 40
# Most names (unexpected properties, enum options) listed in one detail.
NAMES_SHOWN = 8

_ENCODER = msgspec.json.Encoder()


def excerpt(value: object, limit: int = VALUE_CHARS) -> str:
    """A JSON value as it would be written, shortened (`"aaaa..."`, `{"k":"v"...`)."""
    if not isinstance(value, str):
        return shorten(_json(value), limit)
    # Encode only the start of a long string: the reply may hold a megabyte of it.
    inner = _json(value[:limit])[1:-1]
    if len(value) > limit or len(inner) > limit:
        inner = inner[:limit].rstrip("\\") + ELLIPSIS
    return one_line(f'"{inner}"')


def _json(value: object) -> str:
    """Compact JSON text of a value, or its repr when it is not JSON."""
    try:
        return _ENCODER.encode(value).decode("utf-8")
    except (TypeError, ValueError, RecursionError, msgspec.EncodeError):
        return repr(value)


def location(path: Sequence[str | int], root: object = None) -> str:
    """A JSONPath-like location: `$`, `$.name`, `$["odd key"]`, `$.items[2]`."""
    parts = [_segment(part) for part in _steps(path, root)]
    text = "$" + "".join(parts)
    if len(text) <= LOCATION_CHARS:
        return text
    # Keep the start (where in the reply) and the end (which field), as many steps as fit.
    head_chars = LOCATION_CHARS // 3
    head = sum(1 for total in accumulate(map(len, parts)) if total <= head_chars)
    tail_chars = LOCATION_CHARS - head_chars - len(ELLIPSIS)
    tail = sum(1 for total in accumulate(map(len, reversed(parts[head:]))) if total <= tail_chars)
    return "$" + "".join(parts[:head]) + ELLIPSIS + "".join(parts[len(parts) - tail :])


def _steps(path: Sequence[str | int], root: object) -> list[str | int]:
    """The path with each step's kind read from the value it walks."""
    # The validator reports an object's key "2" as the index 2.
    steps: list[str | int] = []
    node = root
    for part in path:
        if isinstance(node, dict):
            key = str(part)
            steps.append(key)
            node = node.get(key)
        else:
            steps.append(part)
            inside = isinstance(node, list | tuple) and isinstance(part, int) and part < len(node)
            node = node[part] if inside else None  # type: ignore[index]
    return steps


def _segment(part: str | int) -> str:
    """One step of a location: `[2]` for an index, `.name` or `["odd key"]` for a key."""
    if isinstance(part, int):
        return f"[{part}]"
    if len(part) <= KEY_CHARS and part.isidentifier() and part.isprintable():
        return "." + part
    return "[" + excerpt(part, KEY_CHARS) + "]"


def describe(error: jsonschema_rs.ValidationError, instance: object) -> str:
    """The error in `instance` as `location: message`, the message short, values excerpted."""
    return f"{location(error.instance_path, instance)}: {message(error)}"


def message(error: jsonschema_rs.ValidationError) -> str:
    """What is wrong, in words; the library's own words, shortened, for the rarer keywords."""
    kind = error.kind
    wording = _WORDINGS.get(kind.name)
    if wording is None:
        return _library_message(error)
    fields = kind.as_dict()
    return shorten(wording(excerpt(error.instance), fields, error.instance), MESSAGE_CHARS)


def _library_message(error: jsonschema_rs.ValidationError) -> str:
    """The library's message with its leading quote of the value excerpted, then shortened."""
    text = error.message
    whole = _json(error.instance)
    if len(whole) > VALUE_CHARS and text.startswith(whole):
        text = excerpt(error.instance) + text[len(whole) :]
    return shorten(text, MESSAGE_CHARS)


def _names(values: Sequence[Any]) -> str:
    """Values listed for a detail: the first few excerpted, then how many more."""
    shown = ", ".join(excerpt(value) for value in values[:NAMES_SHOWN])
    hidden = len(values) - NAMES_SHOWN
    return f"{shown} and {hidden} more" if hidden > 0 else shown


def _type(value: str, fields: dict[str, Any], instance: object) -> str:
    return f"{value} is not of type {' or '.join(fields['types'])}"


def _count(noun: str, relation: str) -> Callable[[str, dict[str, Any], object], str]:
    """A wording for the keywords that bound a count (items, properties, characters)."""
    plural = _PLURALS.get(noun)

    def wording(value: str, fields: dict[str, Any], instance: object) -> str:
        held = count_noun(len(instance), noun, plural) if isinstance(instance, Sized) else "?"
        return f"{value} has {held}, {relation} {fields['limit']}"

    return wording


_PLURALS = {"property": "properties"}


def _unexpected(adjective: str) -> Callable[[str, dict[str, Any], object], str]:
    """A wording for additionalProperties and unevaluatedProperties."""

    def wording(value: str, fields: dict[str, Any], instance: object) -> str:
        names = list(fields["unexpected"])
        noun = "property" if len(names) == 1 else "properties"
        verb = "is" if len(names) == 1 else "are"
        return f"{adjective} {noun} {_names(names)} {verb} not allowed"

    return wording


def _bound(relation: str, limit_name: str) -> Callable[[str, dict[str, Any], object], str]:
    """A wording for minimum, maximum and their exclusive forms."""

    def wording(value: str, fields: dict[str, Any], instance: object) -> str:
        return f"{value} is {relation} the {limit_name} {_json(fields['limit'])}"

    return wording


_WORDINGS: dict[str, Callable[[str, dict[str, Any], object], str]] = {
    "type": _type,
    "minimum": _bound("less than", "minimum"),
    "maximum": _bound("greater than", "maximum"),
    "exclusiveMinimum": _bound("not greater than", "exclusive minimum"),
    "exclusiveMaximum": _bound("not less than", "exclusive maximum"),
    "multipleOf": lambda v, f, i: f"{v} is not a multiple of {_json(f['multiple_of'])}",
    "minLength": _count("character", "fewer than the minimum"),
    "maxLength": _count("character", "more than the maximum"),
    "minItems": _count("item", "fewer than the minimum"),
    "maxItems": _count("item", "more than the maximum"),
    "minProperties": _count("property", "fewer than the minimum"),
    "maxProperties": _count("property", "more than the maximum"),
    "pattern": lambda v, f, i: f"{v} does not match the pattern {excerpt(f['pattern'])}",
    "enum": lambda v, f, i: f"{v} is not one of {_names(f['options'])}",
    "const": lambda v, f, i: f"{v} is not the expected value {excerpt(f['expected_value'])}",
    "required": lambda v, f, i: f"the required property {excerpt(f['property'])} is missing",
    "additionalProperties": _unexpected("the"),
    "unevaluatedProperties": _unexpected("the unevaluated"),
    "uniqueItems": lambda v, f, i: f"{v} has items that are not unique",
    "falseSchema": lambda v, f, i: f"{v} is not allowed here (the schema is false)",
    "format": lambda v, f, i: f"{v} is not a valid {excerpt(f['format'])}",
}
