"""What LangSmith examples and Langfuse dataset items share: a list of records (a JSON list, an
object holding one, or JSON Lines), each an input, an expected output and metadata."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any

from agentlasso.errors import FieldError
from agentlasso.importers.documents import NotJson, Record, read_records
from agentlasso.importers.items import (
    ImportItem,
    ItemReport,
    NotImported,
    Source,
    compact_json,
    unreadable,
)

# Metadata keys a case keeps: the rest of a record's metadata is listed as not imported.
_DESCRIPTION, _TAGS = "description", "tags"


class Reading:
    """One record being read into a case, with its report."""

    def __init__(self, record: Record, noun: str) -> None:
        self.record, self.noun = record, noun
        self.label = f"{noun} {record.number}"
        self.case: dict[str, Any] = {}
        self.origins: list[tuple[str, str]] = []
        self.imported: list[str] = []
        self.lost: list[NotImported] = []

    def put(self, field: str, value: Any, source: str) -> None:
        """A case field, and where in the record it came from."""
        self.case[field] = value
        self.origins.append((f"/{field}", f"{self.record.pointer}/{source}"))
        self.imported.append(f"{field} from {source}")

    def metadata(self, metadata: Any, tags: list[str], source: str = "metadata") -> None:
        """A description and tags from the metadata; its other keys are listed."""
        if not isinstance(metadata, dict):
            metadata = {} if metadata is None else {"": metadata}
        description = metadata.get(_DESCRIPTION)
        if isinstance(description, str) and description:
            self.put("description", description, f"{source}/{_DESCRIPTION}")
        listed = metadata.get(_TAGS)
        if isinstance(listed, list) and all(isinstance(tag, str) for tag in listed):
            tags = [*tags, *listed]
        if tags:
            self.put("tags", list(dict.fromkeys(tags)), source)
        for key in metadata:
            if key not in (_DESCRIPTION, _TAGS, *self.kept_keys):
                what = f"{source}.{key}" if key else source
                self.lost.append(NotImported(what, "a test case has no metadata"))

    kept_keys: tuple[str, ...] = ()

    def skip(self, why: str) -> ImportItem:
        """The record imports nothing, for this reason."""
        lost = (NotImported(self.label, why), *self.lost)
        report = ItemReport(item=self.record.number, label=self.label, cases=0, not_imported=lost)
        return ImportItem(report=report, line=self.record.line)

    def item(self) -> ImportItem:
        """The record as one case."""
        report = ItemReport(
            item=self.record.number, label=self.label, cases=1,
            imported=tuple(self.imported), not_imported=tuple(self.lost),
        )  # fmt: skip
        return ImportItem(
            report=report, line=self.record.line, cases=(self.case,), origins=tuple(self.origins)
        )


def record_source(
    file: IO[bytes], list_keys: tuple[str, ...], noun: str, read: Callable[[Reading], ImportItem]
) -> Source:
    """A file of records, each read by `read` unless it is not a JSON object at all."""
    return Source(notes=(), items=_items(file, list_keys, noun, read), noun=noun)


def _items(
    file: IO[bytes], list_keys: tuple[str, ...], noun: str, read: Callable[[Reading], ImportItem]
) -> Iterator[ImportItem]:
    for record in read_records(file, list_keys):
        label = f"{noun} {record.number}"
        if isinstance(record.value, NotJson):
            error = FieldError(pointer="/", detail=f"Not valid JSON: {record.value.error}")
            yield unreadable(record.number, label, [error], record.line)
        elif not isinstance(record.value, dict):
            error = FieldError(pointer=record.pointer or "/", detail=f"A {noun} is an object.")
            yield unreadable(record.number, label, [error], record.line)
        else:
            yield read(Reading(record, noun))


def as_input(value: Any) -> str | dict[str, Any]:
    """A value as a case's input: text or an object as they are, anything else as JSON text."""
    return value if isinstance(value, str | dict) else compact_json(value)


def as_text(value: Any) -> str:
    """A value as text: text as it is, anything else as compact JSON."""
    return value if isinstance(value, str) else compact_json(value)
