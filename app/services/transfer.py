"""JSON Lines import (all-or-nothing, streamed) and export (streamed) of a dataset's cases,
and the validation and store every import shares."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db import datasets as dataset_rows
from agentlasso.db import test_cases as case_rows
from agentlasso.db.pool import Connection
from agentlasso.domain.field_errors import field_error_from_msgspec
from agentlasso.domain.json_nesting import TOO_DEEP, too_deep
from agentlasso.domain.test_cases import TestCaseContent, TestCaseImportLine
from agentlasso.errors import (
    BodyTooLarge,
    FieldError,
    InvalidInput,
    MalformedBody,
    NotFound,
)
from agentlasso.importers import csv_cases
from agentlasso.importers.items import ImportItem
from agentlasso.services.platform import Platform
from agentlasso.services.test_cases import count_new_cases, prepare_content

COPY_BATCH = 5_000
EXPORT_PAGE = 1_000
# Enough to fix a file in one go without turning the response into a second copy of it.
MAX_REPORTED_ERRORS = 20
# An import this large changes what the planner should know about the case tables.
ANALYZE_AFTER_CASES = 1_000
# Validated cases wait here until the whole body is in; past this they go to a temporary file.
SPOOL_IN_MEMORY_BYTES = 16 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"

_line_decoder = msgspec.json.Decoder(TestCaseImportLine)
_spooled_decoder = msgspec.json.Decoder(TestCaseContent)
_encoder = msgspec.json.Encoder()


async def split_lines(chunks: AsyncIterable[bytes], max_bytes: int) -> AsyncIterator[bytes]:
    """Lines of a streamed body, in time linear in its size however long a line is."""
    partial: list[bytes] = []  # the pieces of a line not yet ended, joined once when it ends
    received = 0
    async for chunk in chunks:
        received += len(chunk)
        if received > max_bytes:
            raise BodyTooLarge(f"The import is over the {max_bytes}-byte limit.")
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            partial.append(chunk[start:end])
            yield b"".join(partial)
            partial = []
            start = end + 1
        if start < len(chunk):
            partial.append(chunk[start:])
    if partial:
        yield b"".join(partial)


class Validator:
    """Validates cases as they arrive and spools the valid ones (or hands each to `sink`),
    until the first bad one."""

    def __init__(self, sink: Callable[[TestCaseContent], None] | None = None) -> None:
        self.spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY_BYTES)  # noqa: SIM115
        self.sink = sink
        self.errors: list[FieldError] = []
        self.error_lines = 0
        self.valid = 0

    def add(self, number: int, raw: bytes) -> None:
        """One line of JSON Lines."""
        parsed = _parse(raw)
        if isinstance(parsed, list):
            self._reject([msgspec.structs.replace(p, line=number) for p in parsed])
        else:
            self._keep(parsed)

    def add_item(self, item: ImportItem) -> None:
        """One item read from another tool's file: its cases, its problems placed in the file."""
        problems = list(item.problems)
        contents: list[TestCaseContent] = []
        for case in item.cases:
            parsed = _parse_case(case)
            if isinstance(parsed, list):
                problems += [_placed(problem, item) for problem in parsed]
            else:
                contents.append(parsed)
        if problems:
            self._reject(list(dict.fromkeys(problems)))  # an expanded test's cases fail alike
            return
        for content in contents:
            self._keep(content)

    def contents(self) -> Iterator[TestCaseContent]:
        """The spooled cases, in the order they came."""
        self.spool.seek(0)
        for line in self.spool:
            yield _spooled_decoder.decode(line)

    def _keep(self, content: TestCaseContent) -> None:
        if self.errors:
            return  # after a bad line nothing more is kept: nothing will be imported
        if self.sink is None:
            self.spool.write(_encoder.encode(content) + b"\n")
        else:
            self.sink(content)
        self.valid += 1

    def _reject(self, problems: list[FieldError]) -> None:
        """Record a bad line or item (its problems already placed)."""
        self.error_lines += 1
        room = MAX_REPORTED_ERRORS - len(self.errors)
        self.errors += problems[: max(room, 0)]


def _parse(raw: bytes) -> TestCaseContent | list[FieldError]:
    """A case in the JSON Lines line's shape, validated and ready to store, or its problems."""
    deep_at = too_deep(raw)
    if deep_at is not None:
        return [FieldError(pointer=deep_at or "/", detail=TOO_DEEP)]
    try:
        line = _line_decoder.decode(raw)
    except msgspec.ValidationError as exc:
        return [field_error_from_msgspec(exc)]
    except msgspec.DecodeError as exc:
        return [FieldError(detail=f"Not valid JSON: {exc}")]
    twice = line.spelled_twice()
    if twice:
        detail = f"Give {twice[0]} once, in snake_case or camelCase, not both."
        return [FieldError(pointer=f"/{twice[0]}", detail=detail)]
    try:
        return prepare_content(line.content())  # which checks what the shape cannot say
    except InvalidInput as exc:
        return exc.errors


def _parse_case(case: dict[str, Any]) -> TestCaseContent | list[FieldError]:
    try:
        raw = _encoder.encode(case)
    except RecursionError:  # a case nested a thousand deep: too deep by far
        return [FieldError(pointer="/", detail=TOO_DEEP)]
    return _parse(raw)


def _placed(problem: FieldError, item: ImportItem) -> FieldError:
    """A problem with one of an item's cases, as a place in the source file."""
    pointer = item.source_pointer(problem.pointer or "/")
    return msgspec.structs.replace(problem, pointer=pointer, item=item.report.item, line=item.line)


async def import_test_cases(
    platform: Platform,
    project_id: UUID,
    dataset_id: UUID,
    body: AsyncIterable[bytes],
    max_bytes: int,
    max_lines: int,
) -> int:
    """Import every line of a JSON Lines body, or nothing; returns how many were imported.

    The whole body is read and validated before a database connection is taken, so a client
    uploading slowly holds none (a pool of connections is easily outnumbered by slow clients).
    """
    await require_dataset(platform, project_id, dataset_id)
    validator = Validator()
    with validator.spool:
        lines = await _validate(validator, body, max_bytes, max_lines)
        _raise_if_rejected(validator, lines)
        await store_validated(platform, project_id, dataset_id, validator)
    return validator.valid


async def require_dataset(platform: Platform, project_id: UUID, dataset_id: UUID) -> None:
    """NotFound unless the dataset is the project's."""
    if await dataset_rows.get_dataset(platform.pool, project_id, dataset_id) is None:
        raise NotFound("No dataset with this id in your project.")


async def store_validated(
    platform: Platform, project_id: UUID, dataset_id: UUID, validator: Validator
) -> None:
    """Store every case the validator kept, in one transaction."""
    async with platform.pool.acquire() as connection, connection.transaction():
        # Held until the cases are in, so the dataset cannot be deleted under the import.
        if await dataset_rows.lock_for_run(connection, project_id, dataset_id) is None:
            raise NotFound("No dataset with this id in your project.")
        await copy_cases(connection, dataset_id, validator.contents())
        await count_new_cases(platform, connection, dataset_id, validator.valid)
    if validator.valid >= ANALYZE_AFTER_CASES:
        await case_rows.refresh_planner_statistics(platform.pool)


# Lines longer than this are checked and decoded on a thread (most lines are a few KiB).
LINE_ON_THREAD_ABOVE_BYTES = 256 * 1024


async def _validate(
    validator: Validator, body: AsyncIterable[bytes], max_bytes: int, max_lines: int
) -> int:
    """Feed every line to the validator; returns how many lines the body had."""
    number = 0
    async for raw in split_lines(body, max_bytes):
        number += 1
        if number > max_lines:
            raise BodyTooLarge(f"The import is over the {max_lines}-line limit.")
        if number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        if not raw.strip():
            continue
        if len(raw) > LINE_ON_THREAD_ABOVE_BYTES:
            # A long line's nesting check and decode would hold the loop for every request.
            await asyncio.to_thread(validator.add, number, raw)
        else:
            validator.add(number, raw)
    return number


async def copy_cases(
    connection: Connection, dataset_id: UUID, contents: Iterable[TestCaseContent]
) -> None:
    """COPY the cases into the dataset, a batch at a time (in the caller's transaction)."""
    batch: list[tuple[Any, ...]] = []
    for content in contents:
        batch.append(case_rows.revision_values(uuid.uuid4(), uuid.uuid4(), dataset_id, 1, content))
        if len(batch) >= COPY_BATCH:
            await case_rows.copy_test_cases(connection, batch)
            batch = []
    if batch:
        await case_rows.copy_test_cases(connection, batch)


def raise_if_invalid(validator: Validator, count: int, noun: str = "line") -> None:
    """InvalidInput naming the bad lines (or items: `noun`) when there are any."""
    if validator.errors:
        first_error = validator.errors[0]
        first = first_error.line if noun == "line" else first_error.item
        raise InvalidInput(
            f"Nothing was imported: {validator.error_lines} of {count} {noun}s are not valid "
            f"test cases (the first is {noun} {first}).",
            validator.errors,
        )


def _raise_if_rejected(validator: Validator, lines: int) -> None:
    raise_if_invalid(validator, lines)
    if validator.valid == 0:
        raise MalformedBody("The import holds no test case: send one JSON object per line.")


def export_line(content: TestCaseContent) -> bytes:
    """One case as a JSON Lines line that imports back unchanged."""
    return _encoder.encode(content) + b"\n"


async def export_test_cases(
    platform: Platform, project_id: UUID, dataset_id: UUID, export_format: str = "jsonl"
) -> AsyncIterator[bytes]:
    """Stream the dataset's cases as JSON Lines (or CSV), a page of lines at a time."""
    await require_dataset(platform, project_id, dataset_id)
    return _export_pages(platform, dataset_id, export_format)


async def _export_pages(
    platform: Platform, dataset_id: UUID, export_format: str
) -> AsyncIterator[bytes]:
    # A connection is held for one page's query only, never while the client reads: a slow
    # reader costs nothing but its socket. (Each page sees the cases as they are when read.)
    row = export_line
    if export_format == "csv":
        row = csv_cases.export_row
        yield csv_cases.header_row()
    after_seq = 0
    while True:
        page = await case_rows.list_test_cases(platform.pool, dataset_id, after_seq, EXPORT_PAGE)
        if not page:
            return
        yield b"".join(row(case.content) for case in page)
        after_seq = page[-1].seq
