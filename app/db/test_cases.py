"""Test cases and their immutable revisions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from app.db.pool import Connection, Executor
from app.domain.test_cases import TestCase, TestCaseContent

# Revision columns in the order `revision_values` produces them.
REVISION_COLUMNS = (
    "id",
    "test_case_id",
    "dataset_id",
    "revision",
    "input",
    "checks_version",
    "checks",
    "evaluation_criteria_json",
    "expected_output",
    "evaluation_type",
    "min_confidence",
    "description",
)
CASE_COLUMNS = ("id", "dataset_id", "current_revision_id")
_CONTENT_FIELDS = TestCaseContent.__struct_fields__

_SELECT = """
SELECT c.id, c.dataset_id, c.seq, c.created_at, c.updated_at,
       r.revision, r.input, r.checks_version, r.checks, r.evaluation_criteria_json,
       r.expected_output, r.evaluation_type, r.min_confidence, r.description
FROM test_cases c
JOIN test_case_revisions r ON r.id = c.current_revision_id
"""

_GET = (
    _SELECT
    + """
JOIN datasets d ON d.id = c.dataset_id
WHERE d.project_id = $1 AND c.id = $2
"""
)

_PAGE = (
    _SELECT
    + """
WHERE c.dataset_id = $1 AND c.seq > $2
ORDER BY c.seq
LIMIT $3
"""
)

_INSERT_REVISION = f"""
INSERT INTO test_case_revisions ({", ".join(REVISION_COLUMNS)})
VALUES ({", ".join(f"${i}" for i in range(1, len(REVISION_COLUMNS) + 1))})
"""

_INSERT_CASE = """
INSERT INTO test_cases (id, dataset_id, current_revision_id) VALUES ($1, $2, $3)
"""

_POINT_AT_REVISION = """
UPDATE test_cases SET current_revision_id = $2, updated_at = now() WHERE id = $1
"""

_LOCK_FOR_UPDATE = """
SELECT r.revision FROM test_cases c
JOIN test_case_revisions r ON r.id = c.current_revision_id
JOIN datasets d ON d.id = c.dataset_id
WHERE d.project_id = $1 AND c.id = $2
FOR UPDATE OF c
"""

# The dataset's case count goes down with the case, in the same statement.
_DELETE = """
WITH gone AS (
    DELETE FROM test_cases c USING datasets d
    WHERE d.id = c.dataset_id AND d.project_id = $1 AND c.id = $2
    RETURNING c.dataset_id
)
UPDATE datasets SET case_count = case_count - 1 WHERE id IN (SELECT dataset_id FROM gone)
"""

_COUNT_CASES = """
UPDATE datasets SET case_count = case_count + $2 WHERE id = $1 RETURNING case_count
"""


def content_of(row: asyncpg.Record) -> TestCaseContent:
    """The gradable content of a revision row (checks were validated when written)."""
    return msgspec.convert({name: row[name] for name in _CONTENT_FIELDS}, TestCaseContent)


def revision_values(
    revision_id: UUID, test_case_id: UUID, dataset_id: UUID, revision: int,
    content: TestCaseContent,
) -> tuple[Any, ...]:  # fmt: skip
    """A revision row's values, in REVISION_COLUMNS order."""
    return (
        revision_id, test_case_id, dataset_id, revision, content.input, content.checks_version,
        content.checks, content.evaluation_criteria_json, content.expected_output,
        content.evaluation_type, content.min_confidence, content.description,
    )  # fmt: skip


def _case(row: asyncpg.Record) -> TestCase:
    return TestCase(
        id=row["id"],
        dataset_id=row["dataset_id"],
        seq=row["seq"],
        revision=row["revision"],
        content=content_of(row),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def get_test_case(
    executor: Executor, project_id: UUID, test_case_id: UUID
) -> TestCase | None:
    """The case with its current revision, or None when it is not in this project."""
    row = await executor.fetchrow(_GET, project_id, test_case_id)
    return None if row is None else _case(row)


async def list_test_cases(
    executor: Executor, dataset_id: UUID, after_seq: int, limit: int
) -> list[TestCase]:
    """One page of a dataset's cases in their order."""
    return [_case(row) for row in await executor.fetch(_PAGE, dataset_id, after_seq, limit)]


async def insert_test_case(connection: Connection, revision: Sequence[Any]) -> None:
    """Store a new case and its first revision (a row of REVISION_COLUMNS)."""
    await connection.execute(_INSERT_REVISION, *revision)
    await connection.execute(_INSERT_CASE, revision[1], revision[2], revision[0])


async def copy_test_cases(connection: Connection, revisions: Sequence[Sequence[Any]]) -> None:
    """Bulk-store new cases with their first revisions through COPY."""
    await connection.copy_records_to_table(
        "test_case_revisions", records=revisions, columns=REVISION_COLUMNS
    )
    await connection.copy_records_to_table(
        "test_cases",
        records=[(rev[1], rev[2], rev[0]) for rev in revisions],
        columns=CASE_COLUMNS,
    )


async def lock_current_revision(
    connection: Connection, project_id: UUID, test_case_id: UUID
) -> int | None:
    """Lock the case row for an update and return its revision number; None if absent."""
    revision: int | None = await connection.fetchval(_LOCK_FOR_UPDATE, project_id, test_case_id)
    return revision


async def add_revision(connection: Connection, revision: Sequence[Any]) -> None:
    """Store a new revision and make it the case's current one."""
    await connection.execute(_INSERT_REVISION, *revision)
    await connection.execute(_POINT_AT_REVISION, revision[1], revision[0])


async def delete_test_case(executor: Executor, project_id: UUID, test_case_id: UUID) -> bool:
    """Delete the live case (its revisions stay for the runs that pinned them)."""
    status: str = await executor.execute(_DELETE, project_id, test_case_id)
    return status == "UPDATE 1"


async def count_new_cases(connection: Connection, dataset_id: UUID, added: int) -> int:
    """Add cases to the dataset's count (locking its row until the transaction ends); the
    count it now has."""
    count: int = await connection.fetchval(_COUNT_CASES, dataset_id, added)
    return count
