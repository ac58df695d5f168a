"""Keyset pagination: `?limit=&cursor=`, a cursor being a position in a table's `seq` order.

A cursor is opaque to clients (they pass on next_cursor), but any well-formed one is a valid
position: a page after it, possibly empty. So the query parameters say exactly what is accepted.
"""

from __future__ import annotations

import re
from typing import Annotated
from uuid import UUID

from litestar.params import QueryParameter

from agentlasso.errors import FieldError, InvalidInput, NotFound

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
# Digits only, and few enough to always fit the bigint `seq` column.
CURSOR_PATTERN = r"^[0-9]{1,18}$"
_CURSOR = re.compile(CURSOR_PATTERN)

Limit = Annotated[int, QueryParameter(ge=1, le=MAX_LIMIT, description="Items per page.")]
Cursor = Annotated[
    str | None,
    QueryParameter(
        pattern=CURSOR_PATTERN,
        description="The next_cursor of the previous page; absent for the first page.",
    ),
]


def encode_cursor(seq: int) -> str:
    """The cursor that continues after the row with this `seq`."""
    return str(seq)


def decode_cursor(cursor: str | None) -> int:
    """The `seq` a cursor continues after (0 for the first page)."""
    if not cursor:
        return 0
    if _CURSOR.match(cursor):
        return int(cursor)
    raise InvalidInput(
        "The cursor is not valid.",
        [FieldError(parameter="cursor", detail="Use the next_cursor of the previous page.")],
    )


def next_cursor(seqs: list[int], limit: int) -> str | None:
    """The cursor to the next page, None when this page is the last one."""
    return encode_cursor(seqs[limit - 1]) if len(seqs) > limit else None


def parse_id(raw: str, what: str) -> UUID:
    """An id from a path: an unknown shape is simply an object that does not exist."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f"No {what} with this id in your project.") from None


def body_id(raw: str, pointer: str, what: str) -> UUID:
    """An id the body names; one of no id's shape is simply an object that does not exist,
    and the 404 points at where the body named it."""
    try:
        return UUID(raw)
    except ValueError:
        detail = f"No {what} with this id in your project."
        raise NotFound(detail, [FieldError(pointer=pointer, detail=detail)]) from None


# A comparison's cases are listed by bucket rank, then seq: its cursor is `rank.seq`.
COMPARE_CURSOR = re.compile(r"^([1-7])\.(\d{1,18})$")


def encode_compared_cursor(after: tuple[int, int] | None) -> str | None:
    """The cursor that continues a comparison after (rank, seq); None at the end."""
    return None if after is None else f"{after[0]}.{after[1]}"


def decode_compared_cursor(cursor: str | None, hint: str) -> tuple[int, int]:
    """The (rank, seq) a comparison's cursor continues after ((0, 0): the first page); `hint`
    says where a valid one comes from."""
    if not cursor:
        return (0, 0)
    found = COMPARE_CURSOR.match(cursor)
    if found is None:
        raise InvalidInput(
            "The cursor is not valid.", [FieldError(parameter="cursor", detail=hint)]
        )
    return int(found[1]), int(found[2])
