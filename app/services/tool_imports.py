"""Importing another tool's file (CSV, promptfoo, LangSmith, Langfuse): every case or none, and
per source item what was imported and what was not.

The body is spooled (to disk past a few MiB) before anything is read, then read, validated and
spooled again as cases on a thread: a large YAML file takes seconds of parsing that must not
hold the event loop. A connection is taken only to store the validated cases.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterable
from typing import IO
from uuid import UUID

from agentlasso.domain.import_reports import ImportReport
from agentlasso.errors import BodyTooLarge, FieldError, InvalidInput
from agentlasso.importers.formats import READERS
from agentlasso.importers.items import ReportList, Source
from agentlasso.services.platform import Platform
from agentlasso.services.transfer import (
    MAX_REPORTED_ERRORS,
    SPOOL_IN_MEMORY_BYTES,
    Validator,
    require_dataset,
    store_validated,
)


async def import_from_tool(
    platform: Platform,
    project_id: UUID,
    dataset_id: UUID,
    body: AsyncIterable[bytes],
    source_format: str,
    max_bytes: int,
    max_cases: int,
) -> ImportReport:
    """Import a file of another tool's format, or nothing; says what became of each item."""
    await require_dataset(platform, project_id, dataset_id)
    validator = Validator()
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY_BYTES) as file, validator.spool:
        await _receive(body, file, max_bytes)
        file.seek(0)
        report = await asyncio.to_thread(_read, source_format, file, validator, max_cases)
        await store_validated(platform, project_id, dataset_id, validator)
    return report


async def _receive(body: AsyncIterable[bytes], file: IO[bytes], max_bytes: int) -> None:
    received = 0
    async for chunk in body:
        received += len(chunk)
        if received > max_bytes:
            raise BodyTooLarge(f"The import is over the {max_bytes}-byte limit.")
        file.write(chunk)


def _read(
    source_format: str, file: IO[bytes], validator: Validator, max_cases: int
) -> ImportReport:
    """Read and validate every item (InvalidInput when any cannot be imported)."""
    source = READERS[source_format](file)
    reports = ReportList()
    for item in source.items:
        validator.add_item(item)
        reports.add(item.report)
        if validator.valid > max_cases:
            raise BodyTooLarge(f"The import is over the {max_cases:,}-case limit.")
    _raise_if_rejected(validator, reports, source)
    return ImportReport(
        imported=validator.valid,
        format=source_format,
        notes=source.notes,
        items=reports.reports(),
        items_left_off=reports.seen - len(reports.reports()),
        not_imported_count=reports.not_imported + len(source.notes),
    )


def _raise_if_rejected(validator: Validator, reports: ReportList, source: Source) -> None:
    noun = source.noun
    if validator.errors:
        first = validator.errors[0].item
        raise InvalidInput(
            f"Nothing was imported: {validator.error_lines} of {reports.seen} {noun}s cannot be "
            f"read as test cases (the first is {noun} {first}).",
            validator.errors,
        )
    if validator.valid == 0:
        why = [
            FieldError(item=report.item, detail=f"{lost.what}: {lost.why}")
            for report in reports.reports()
            for lost in report.not_imported[:1]
        ]
        raise InvalidInput(
            f"Nothing was imported: none of the {reports.seen} {noun}s makes a test case.",
            why[:MAX_REPORTED_ERRORS]
            or [FieldError(pointer="/", detail=f"The file has no {noun}s.")],
        )
