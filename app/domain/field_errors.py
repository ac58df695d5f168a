"""How a msgspec validation error names the field it is about, and says so in words that name
the check types when a check's type is unknown."""

from __future__ import annotations

import re

import msgspec

from agentlasso.domain.checks import CHECK_TYPES
from agentlasso.domain.json_pointers import json_pointer
from agentlasso.domain.test_cases import TAG_RULE
from agentlasso.errors import FieldError

_PATH = re.compile(r" - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`$")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[\"([^\"]*)\"\]")
# Messages that name the field themselves: the pointer should end at that field.
_TAG_POINTER = re.compile(r"(^|/)tags(/\d+)?$")
# msgspec's step for "some key of a mapping".
_ANY_KEY = "[...]"
_NAMED_FIELD = re.compile(r"Object (?:contains unknown|missing required) field `([^`]*)`")


def pointer_from_path(path: str) -> str:
    """`.checks[0].tool` -> `/checks/0/tool`."""
    parts = [name or index or key for name, index, key in _STEP.findall(path)]
    return json_pointer(parts)


def field_error_from_msgspec(error: msgspec.ValidationError) -> FieldError:
    """The field a msgspec validation error is about, and what is wrong with it.

    msgspec does not say which key of a mapping holds the bad value (`[...]`): the pointer
    then ends at the mapping, and the detail says where under one of its keys."""
    message = str(error)
    match = _PATH.search(message)
    path = match.group("path") if match else ""
    detail = message[: match.start()] if match else message
    if match and match.group("key"):
        detail = f"{detail} (a key)"
    if _ANY_KEY in path:
        path, under = path.split(_ANY_KEY, 1)
        where = f"under one of its keys, at `{under.lstrip('.')}`" if under else "in a value"
        pointer = pointer_from_path(path)
        return FieldError(pointer=pointer or "/", detail=f"{detail} ({where})")
    pointer = with_named_field(pointer_from_path(path), detail)
    return FieldError(pointer=pointer or "/", detail=friendlier(detail, pointer))


def with_named_field(pointer: str, detail: str) -> str:
    """Extend the pointer to the field a message names (a missing or unknown field)."""
    named = _NAMED_FIELD.match(detail)
    return f"{pointer}/{named.group(1)}" if named else pointer


def friendlier(detail: str, pointer: str) -> str:
    """Say what an unknown check type is, and what a tag may be, rather than msgspec's generic
    wording."""
    if pointer.endswith("/type") and "/checks/" in pointer and detail.startswith("Invalid value"):
        return f"{detail}: unknown check type; expected one of {', '.join(CHECK_TYPES)}."
    if _TAG_POINTER.search(pointer) and detail.startswith("Expected `"):
        if "matching regex" in detail:
            detail = "A tag may not hold whitespace, a comma or a control character"
        return f"{detail}. {TAG_RULE}"
    return detail
