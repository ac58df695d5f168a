"""What PostgreSQL can store: text without the character U+0000.

What people write (names, cases, checks, contexts, labels) is refused with the field named when
it holds one; what agents answer is stored faithfully by the database layer instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from agentlasso.domain.json_pointers import json_pointer
from agentlasso.errors import FieldError, InvalidInput

# The rule as a pattern (ECMA-262 and Python alike), for the API's description and its queries.
WITHOUT_NUL_PATTERN = r"^[^\x00]*$"
_ESCAPED_NUL = b"\\u0000"
_DETAIL = "Text here may not contain the character U+0000 (NUL)."


def nul_pointer(value: Any, pointer: str = "") -> str | None:
    """The JSON pointer of the first string or key holding U+0000 in a JSON value, or None."""
    if isinstance(value, str):
        return pointer if "\x00" in value else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = pointer + json_pointer([key])
            if "\x00" in str(key):
                return here
            found = nul_pointer(item, here)
            if found is not None:
                return found
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = nul_pointer(item, f"{pointer}/{index}")
            if found is not None:
                return found
    return None


def nul_problems(values: Mapping[str, Any], prefix: str = "") -> list[FieldError]:
    """A FieldError for every field whose text holds U+0000 (a quick scan finds none first)."""
    builtins = msgspec.to_builtins(dict(values))
    if _ESCAPED_NUL not in msgspec.json.encode(builtins):
        return []
    # Also matched by the text "\\u0000" written out, which the walk then does not report.
    return [
        FieldError(pointer=pointer, detail=_DETAIL)
        for name, value in builtins.items()
        if (pointer := nul_pointer(value, prefix + json_pointer([name]))) is not None
    ]


def refuse_nul(values: Mapping[str, Any], prefix: str = "") -> None:
    """InvalidInput naming every field whose text holds U+0000."""
    problems = nul_problems(values, prefix)
    if problems:
        detail = "Some text holds the character U+0000 (NUL), which cannot be stored."
        raise InvalidInput(detail, problems)
