"""Opaque cursors over a table's `seq` column."""

from __future__ import annotations

import base64
import binascii
from uuid import UUID

from app.errors import FieldError, InvalidInput, NotFound

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
MAX_SEQ = 2**63 - 1


def encode_cursor(seq: int) -> str:
    """The cursor that continues after the row with this `seq`."""
    return base64.urlsafe_b64encode(f"s{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int:
    """The `seq` a cursor continues after (0 for the first page)."""
    if not cursor:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        seq = int(text[1:]) if text.startswith("s") and text[1:].isdigit() else -1
        # Row ids are bigints: anything beyond could not have come from a page.
        if 0 <= seq <= MAX_SEQ:
            return seq
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidInput(
        "The cursor is not valid.",
        [FieldError(parameter="cursor", detail="Use the next_cursor of the previous page.")],
    )


def check_limit(limit: int) -> int:
    """The page size, refused when out of range."""
    if not 1 <= limit <= MAX_LIMIT:
        detail = f"limit must be between 1 and {MAX_LIMIT}."
        raise InvalidInput(detail, [FieldError(parameter="limit", detail=detail)])
    return limit


def next_cursor(seqs: list[int], limit: int) -> str | None:
    """The cursor to the next page, None when this page is the last one."""
    return encode_cursor(seqs[limit - 1]) if len(seqs) > limit else None


def parse_id(raw: str, what: str) -> UUID:
    """An id from a path: an unknown shape is simply an object that does not exist."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f"No {what} with this id in your project.") from None
