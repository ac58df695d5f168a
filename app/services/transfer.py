"""JSON Lines import (all-or-nothing, streamed) and export (streamed) of a dataset's cases."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any
from uuid import UUID

import msgspec

from app.db import datasets as dataset_rows
from app.db import test_cases as case_rows
from app.db.pool import Connection
from app.domain.test_cases import TestCaseContent, TestCaseImportLine
from app.errors import (
    BodyTooLarge,
    FieldError,
    InvalidInput,
    MalformedBody,
    NotFound,
    field_error_from_msgspec,
)
from app.services.platform import Platform
from app.services.test_cases import content_problems, prepare_content

COPY_BATCH = 5_000
# Enough to fix a file in one go without turning the response into a second copy of it.
MAX_REPORTED_ERRORS = 20
_BOM = b"\xef\xbb\xbf"

_line_decoder = msgspec.json.Decoder(TestCaseImportLine)
_encoder = msgspec.json.Encoder()


async def split_lines(chunks: AsyncIterable[bytes], max_bytes: int) -> AsyncIterator[bytes]:
    """Lines of a streamed body, without holding more than one partial line."""
    pending = b""
    received = 0
    async for chunk in chunks:
        received += len(chunk)
        if received > max_bytes:
            raise BodyTooLarge(f"The import is over the {max_bytes}-byte limit.")
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line
    if pending:
        yield pending


class _Importer:
    """Validates lines as they arrive and copies them in batches, until the first bad line."""

    def __init__(self, connection: Connection, dataset_id: UUID) -> None:
        self.connection = connection
        self.dataset_id = dataset_id
        self.batch: list[tuple[Any, ...]] = []
        self.errors: list[FieldError] = []
        self.error_lines = 0
        self.imported = 0

    async def add(self, number: int, raw: bytes) -> None:
        content = self._parse(number, raw)
        if content is None or self.errors:
            return  # after a bad line nothing more is written: the transaction will roll back
        row = case_rows.revision_values(uuid.uuid4(), uuid.uuid4(), self.dataset_id, 1, content)
        self.batch.append(row)
        if len(self.batch) >= COPY_BATCH:
            await self.flush()

    async def flush(self) -> None:
        if self.batch and not self.errors:
            await case_rows.copy_test_cases(self.connection, self.batch)
            self.imported += len(self.batch)
        self.batch = []

    def _parse(self, number: int, raw: bytes) -> TestCaseContent | None:
        try:
            line = _line_decoder.decode(raw)
        except msgspec.ValidationError as exc:
            return self._reject(number, [field_error_from_msgspec(exc)])
        except msgspec.DecodeError as exc:
            return self._reject(number, [FieldError(detail=f"Not valid JSON: {exc}")])
        twice = line.spelled_twice()
        if twice:
            detail = f"Give {twice[0]} once, in snake_case or camelCase, not both."
            return self._reject(number, [FieldError(pointer=f"/{twice[0]}", detail=detail)])
        content = line.content()
        problems = content_problems(content)
        if problems:
            return self._reject(number, problems)
        return prepare_content(content)

    def _reject(self, number: int, problems: list[FieldError]) -> TestCaseContent | None:
        """Record a bad line; None (no content), so a parser can `return self._reject(...)`."""
        self.error_lines += 1
        for problem in problems:
            if len(self.errors) < MAX_REPORTED_ERRORS:
                self.errors.append(msgspec.structs.replace(problem, line=number))
        return None


async def import_test_cases(
    platform: Platform,
    project_id: UUID,
    dataset_id: UUID,
    body: AsyncIterable[bytes],
    max_bytes: int,
    max_lines: int,
) -> int:
    """Import every line of a JSON Lines body, or nothing; returns how many were imported."""
    async with platform.pool.acquire() as connection, connection.transaction():
        if await dataset_rows.get_dataset(connection, project_id, dataset_id) is None:
            raise NotFound("No dataset with this id in your project.")
        importer = _Importer(connection, dataset_id)
        number = 0
        async for raw in split_lines(body, max_bytes):
            number += 1
            if number > max_lines:
                raise BodyTooLarge(f"The import is over the {max_lines}-line limit.")
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            if raw.strip():
                await importer.add(number, raw)
        await importer.flush()
        _raise_if_rejected(importer, number)
    return importer.imported


def _raise_if_rejected(importer: _Importer, lines: int) -> None:
    if importer.errors:
        first = importer.errors[0].line
        raise InvalidInput(
            f"Nothing was imported: {importer.error_lines} of {lines} lines are not valid "
            f"test cases (the first is line {first}).",
            importer.errors,
        )
    if importer.imported == 0:
        raise MalformedBody("The import holds no test case: send one JSON object per line.")


def export_line(content: TestCaseContent) -> bytes:
    """One case as a JSON Lines line that imports back unchanged."""
    return _encoder.encode(content) + b"\n"


async def export_test_cases(
    platform: Platform, project_id: UUID, dataset_id: UUID, lines_per_chunk: int = 500
) -> AsyncIterator[bytes]:
    """Stream the dataset's cases as JSON Lines, a chunk of lines at a time."""
    if await dataset_rows.get_dataset(platform.pool, project_id, dataset_id) is None:
        raise NotFound("No dataset with this id in your project.")
    return _export_chunks(platform, dataset_id, lines_per_chunk)


async def _export_chunks(
    platform: Platform, dataset_id: UUID, lines_per_chunk: int
) -> AsyncIterator[bytes]:
    async with platform.pool.acquire() as connection, connection.transaction(readonly=True):
        chunk: list[bytes] = []
        async for content in case_rows.stream_test_cases(connection, dataset_id):
            chunk.append(export_line(content))
            if len(chunk) >= lines_per_chunk:
                yield b"".join(chunk)
                chunk = []
        if chunk:
            yield b"".join(chunk)
