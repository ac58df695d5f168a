"""What an import from another tool says it did: per source item, what was imported and what
was not, and why."""

from __future__ import annotations

import msgspec


class NotImported(msgspec.Struct, frozen=True):
    """A part of the source that no case holds, and why."""

    what: str
    why: str


class ItemReport(msgspec.Struct, frozen=True, kw_only=True):
    """One source item: what it became, and what of it was not imported."""

    item: int
    # How people name it: "test 4", "row 3", "example 12".
    label: str
    cases: int
    imported: tuple[str, ...] = ()
    not_imported: tuple[NotImported, ...] = ()


class ImportReport(msgspec.Struct, frozen=True, kw_only=True):
    """What an import from another tool did, per source item."""

    imported: int
    format: str
    notes: tuple[NotImported, ...] = ()
    items: tuple[ItemReport, ...] = ()
    # Source items not listed (MAX_REPORTED_ITEMS), and how many parts were not imported in all.
    items_left_off: int = 0
    not_imported_count: int = 0
