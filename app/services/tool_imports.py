"""Importing another tool's file (CSV, promptfoo, LangSmith, Langfuse): every case or none, and
per source item what was imported and what was not.

The body is spooled (to disk past a few MiB) before anything is read; then it is read and
validated on a thread (a large YAML file is seconds of parsing the event loop must not wait
on) while the loop COPYs each batch of valid cases in one transaction, so PostgreSQL stores
while Python parses. A bad item anywhere rolls the transaction back: nothing is imported.
Unlike a JSON Lines import the connection is held while the file is read, which is bounded
(the file is already here, at most MAX_DOCUMENT_BYTES when read whole).
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import AsyncIterable
from typing import IO
from uuid import UUID

from agentlasso.db import datasets as dataset_rows
from agentlasso.db import test_cases as case_rows
from agentlasso.db.pool import Connection
from agentlasso.domain.import_reports import ImportReport
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.errors import BodyTooLarge, FieldError, InvalidInput, NotFound
from agentlasso.importers.formats import READERS
from agentlasso.importers.items import ReportList, Source
from agentlasso.services.platform import Platform
from agentlasso.services.test_cases import count_new_cases
from agentlasso.services.transfer import (
    ANALYZE_AFTER_CASES,
    COPY_BATCH,
    MAX_REPORTED_ERRORS,
    SPOOL_IN_MEMORY_BYTES,
    Validator,
    copy_cases,
    raise_if_invalid,
    require_dataset,
)

# Batches waiting for their COPY: enough to keep PostgreSQL busy, few enough to bound memory.
QUEUED_BATCHES = 2


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
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY_BYTES) as file:
        await _receive(body, file, max_bytes)
        file.seek(0)
        async with platform.pool.acquire() as connection, connection.transaction():
            # Held until the cases are in, so the dataset cannot be deleted under the import.
            if await dataset_rows.lock_for_run(connection, project_id, dataset_id) is None:
                raise NotFound("No dataset with this id in your project.")
            report = await _read_and_copy(connection, dataset_id, source_format, file, max_cases)
            await count_new_cases(platform, connection, dataset_id, report.imported)
    if report.imported >= ANALYZE_AFTER_CASES:
        await case_rows.refresh_planner_statistics(platform.pool)
    return report


async def _receive(body: AsyncIterable[bytes], file: IO[bytes], max_bytes: int) -> None:
    received = 0
    async for chunk in body:
        received += len(chunk)
        if received > max_bytes:
            raise BodyTooLarge(f"The import is over the {max_bytes}-byte limit.")
        file.write(chunk)


class _Handover:
    """Batches of valid cases from the reading thread to the loop's COPY."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[list[TestCaseContent] | None] = asyncio.Queue(QUEUED_BATCHES)
        self.batch: list[TestCaseContent] = []
        # Set when the COPY failed: the reader stops instead of waiting on a queue none reads.
        self.stopped = threading.Event()

    def add(self, content: TestCaseContent) -> None:
        """From the reading thread: one valid case."""
        self.batch.append(content)
        if len(self.batch) >= COPY_BATCH:
            self._put(self.batch)
            self.batch = []

    def finish(self) -> None:
        """From the reading thread: the last batch, then the end."""
        if self.batch:
            self._put(self.batch)
        self._put(None)

    def _put(self, batch: list[TestCaseContent] | None) -> None:
        if self.stopped.is_set():
            raise RuntimeError("the import's COPY failed; reading stopped")
        asyncio.run_coroutine_threadsafe(self.queue.put(batch), self.loop).result()


async def _read_and_copy(
    connection: Connection, dataset_id: UUID, source_format: str, file: IO[bytes],
    max_cases: int,
) -> ImportReport:  # fmt: skip
    handover = _Handover(asyncio.get_running_loop())
    reading = asyncio.ensure_future(
        asyncio.to_thread(_read, source_format, file, handover, max_cases)
    )
    try:
        while (batch := await handover.queue.get()) is not None:
            await copy_cases(connection, dataset_id, batch)
    except BaseException:
        handover.stopped.set()
        while not handover.queue.empty():  # free a reader waiting to put
            handover.queue.get_nowait()
        await asyncio.wait([reading])
        reading.exception()  # the COPY's failure is the one to report
        raise
    return await reading


def _read(source_format: str, file: IO[bytes], handover: _Handover, max_cases: int) -> ImportReport:
    """Read and validate every item (InvalidInput when any cannot be imported)."""
    try:
        validator = Validator(sink=handover.add)
        with validator.spool:
            source = READERS[source_format](file)
            reports = ReportList()
            for item in source.items:
                validator.add_item(item)
                reports.add(item.report)
                if validator.valid > max_cases:
                    raise BodyTooLarge(f"The import is over the {max_cases:,}-case limit.")
            _raise_if_rejected(validator, reports, source)
    finally:
        if not handover.stopped.is_set():
            handover.finish()
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
    raise_if_invalid(validator, reports.seen, noun)
    if validator.valid == 0:
        why = [
            FieldError(item=report.item, detail=f"{lost.what}: {lost.why}")
            for report in reports.reports()
            for lost in report.not_imported[:1]
        ]
        nothing = [FieldError(pointer="/", detail=f"The file has no {noun}s.")]
        raise InvalidInput(
            f"Nothing was imported: none of the {reports.seen} {noun}s makes a test case.",
            why[:MAX_REPORTED_ERRORS] or nothing,
        )
