"""RFC 6901 JSON pointers, as problem+json names a field: `/checks/2/arguments/a~1b`."""

from __future__ import annotations

from collections.abc import Iterable


def json_pointer(steps: Iterable[object]) -> str:
    """The pointer to a path of keys and indexes (`~` and `/` in a key escaped); "" for the root."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in steps)
