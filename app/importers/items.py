"""What a reader makes of a file: import items (cases, and the report of one source item)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import msgspec

from agentlasso.domain.import_reports import ItemReport, NotImported
from agentlasso.errors import FieldError

# A report lists every source item of a file this size; past it, those with something not
# imported first (what a person must act on), then the others, up to this many in all.
MAX_REPORTED_ITEMS = 1_000
__all__ = ["ImportItem", "ItemReport", "NotImported", "ReportList", "Source"]


class ImportItem(msgspec.Struct, frozen=True, kw_only=True):
    """One source item as a reader gives it: its cases, or why it cannot be read at all."""

    report: ItemReport
    # The source line where it starts, when the format has lines.
    line: int | None = None
    # In the shape of a JSON Lines line (TestCaseImportLine).
    cases: tuple[dict[str, Any], ...] = ()
    # Where in the source each part of a case came from: (pointer into the case, pointer into
    # the source), so a problem with a case names the source's field.
    origins: tuple[tuple[str, str], ...] = ()
    # The item cannot be read: nothing of the file is imported.
    problems: tuple[FieldError, ...] = ()

    def source_pointer(self, case_pointer: str) -> str:
        """The source's pointer for a pointer into one of this item's cases."""
        best = ("", "")
        for prefix, origin in self.origins:
            matches = case_pointer == prefix or case_pointer.startswith(prefix + "/")
            if matches and len(prefix) > len(best[0]):
                best = (prefix, origin)
        if not best[0]:
            return case_pointer
        return best[1] + case_pointer[len(best[0]) :]


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """A file as a reader sees it: notes on the whole file, then its items one by one."""

    # Parts of the file that belong to no item (a promptfoo config's prompts and providers).
    notes: tuple[NotImported, ...]
    items: Iterator[ImportItem]
    # What one item is called in messages ("test", "row").
    noun: str


class ReportList:
    """The item reports to show: every item of a small file; of a large one, those with
    something not imported first, up to MAX_REPORTED_ITEMS in all, in source order."""

    def __init__(self) -> None:
        self.lossy: list[ItemReport] = []
        self.clean: list[ItemReport] = []
        self.seen = 0
        self.not_imported = 0

    def add(self, report: ItemReport) -> None:
        self.seen += 1
        self.not_imported += len(report.not_imported)
        kept = self.lossy if report.not_imported else self.clean
        if len(kept) < MAX_REPORTED_ITEMS:
            kept.append(report)

    def reports(self) -> tuple[ItemReport, ...]:
        """The reports to show, in source order."""
        room = MAX_REPORTED_ITEMS - len(self.lossy)
        shown = self.lossy + self.clean[: max(room, 0)]
        return tuple(sorted(shown, key=lambda report: report.item))


def unreadable(
    number: int, label: str, problems: list[FieldError], line: int | None = None
) -> ImportItem:
    """An item that cannot be read, its problems placed at it."""
    placed = tuple(msgspec.structs.replace(p, item=number, line=p.line or line) for p in problems)
    return ImportItem(
        report=ItemReport(item=number, label=label, cases=0), line=line, problems=placed
    )


def compact_json(value: Any) -> str:
    """A value as compact JSON text."""
    return msgspec.json.encode(value).decode()


def js_string(value: Any) -> str:
    """A scalar as JavaScript's String() spells it (promptfoo compares such strings)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int) else msgspec.json.encode(value).decode()
