"""Test cases and their immutable revisions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.test_cases import TestCase, TestCaseContent
from agentlasso.domain.web import CaseFilter, Revision

# Revision columns in the order `revision_values` produces them.
REVISION_COLUMNS = (
    "id",
    "test_case_id",
    "dataset_id",
    "revision",
    "input",
    "conversation",
    "checks_version",
    "checks",
    "evaluation_criteria_json",
    "expected_output",
    "evaluation_type",
    "min_confidence",
    "description",
    "tags",
    "tool_fixtures",
)
CASE_COLUMNS = ("id", "dataset_id", "current_revision_id")
_CONTENT_FIELDS = TestCaseContent.__struct_fields__

_SELECT = """
SELECT c.id, c.dataset_id, c.seq, c.created_at, c.updated_at, c.source_trace_id,
       r.revision, r.input, r.conversation, r.checks_version, r.checks, r.evaluation_criteria_json,
       r.expected_output, r.evaluation_type, r.min_confidence, r.description, r.tags,
       r.tool_fixtures
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

_DATASET_COLUMNS = ", ".join(f"d.{name} AS dataset_{name}" for name in Dataset.__struct_fields__)
# The case and its dataset in one round trip, as the rubric editor shows them.
_GET_WITH_DATASET = (
    _SELECT.replace("\nFROM test_cases c", f", {_DATASET_COLUMNS}\nFROM test_cases c", 1)
    + """
JOIN datasets d ON d.id = c.dataset_id
WHERE d.project_id = $1 AND c.id = $2 AND d.deleted_at IS NULL
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
INSERT INTO test_cases (id, dataset_id, current_revision_id, source_trace_id)
VALUES ($1, $2, $3, $4)
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
RETURNING id
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
        revision_id, test_case_id, dataset_id, revision, content.input, content.conversation,
        content.checks_version,
        content.checks, content.evaluation_criteria_json, content.expected_output,
        content.evaluation_type, content.min_confidence, content.description, content.tags,
        content.tool_fixtures,
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
        source_trace_id=row["source_trace_id"],
    )


async def get_test_case(
    executor: Executor, project_id: UUID, test_case_id: UUID
) -> TestCase | None:
    """The case with its current revision, or None when it is not in this project."""
    row = await executor.fetchrow(_GET, project_id, test_case_id)
    return None if row is None else _case(row)


async def get_test_case_with_dataset(
    executor: Executor, project_id: UUID, test_case_id: UUID
) -> tuple[TestCase, Dataset] | None:
    """The case with its current revision, and its dataset; None when not in this project."""
    row = await executor.fetchrow(_GET_WITH_DATASET, project_id, test_case_id)
    if row is None:
        return None
    dataset = Dataset(**{name: row[f"dataset_{name}"] for name in Dataset.__struct_fields__})
    return _case(row), dataset


async def list_test_cases(
    executor: Executor, dataset_id: UUID, after_seq: int, limit: int
) -> list[TestCase]:
    """One page of a dataset's cases in their order."""
    return [_case(row) for row in await executor.fetch(_PAGE, dataset_id, after_seq, limit)]


async def insert_test_case(
    connection: Connection, revision: Sequence[Any], source_trace_id: str | None = None
) -> None:
    """Store a new case and its first revision (a row of REVISION_COLUMNS)."""
    await connection.execute(_INSERT_REVISION, *revision)
    await connection.execute(_INSERT_CASE, revision[1], revision[2], revision[0], source_trace_id)


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


async def refresh_planner_statistics(executor: Executor) -> None:
    """Re-sample the case tables, so the planner sees a large import at once.

    Until autovacuum's next look (up to a minute later), the planner would think a dataset
    that just grew by 100,000 cases is still small, and search it by reading every match
    before sorting, a hundred times slower. ANALYZE samples a bounded number of rows, so this
    costs a few hundred milliseconds whatever the tables' size."""
    await executor.execute("ANALYZE test_cases, test_case_revisions")


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


async def delete_test_case(executor: Executor, project_id: UUID, test_case_id: UUID) -> UUID | None:
    """Delete the live case (its revisions stay for the runs that pinned them); its dataset,
    None when the project has no such case."""
    dataset_id: UUID | None = await executor.fetchval(_DELETE, project_id, test_case_id)
    return dataset_id


async def count_new_cases(connection: Connection, dataset_id: UUID, added: int) -> int:
    """Add cases to the dataset's count (locking its row until the transaction ends); the
    count it now has."""
    count: int = await connection.fetchval(_COUNT_CASES, dataset_id, added)
    return count


# The text a search looks in; the same expression as test_case_revisions_search_idx.
# The expression test_case_revisions_search_idx indexes (sql/0019_conversations.sql): the input,
# or a conversation's scripted user messages, then the description.
_SEARCHED = (
    "((coalesce(r.input, jsonb_path_query_array(r.conversation, '$.turns[*].user')) #>> '{}')"
    " || ' ' || coalesce(r.description, ''))"
)
_JUDGED = """(r.checks @> '[{"type": "llm_judge"}]' OR r.expected_output IS NOT NULL)"""


def _filter_sql(where: CaseFilter, next_param: int) -> tuple[list[str], list[Any]]:
    """SQL conditions for a filter, with their parameters numbered from `next_param`.

    Only the conditions in use are written, so each combination is a plan of its own that can
    use the search and checks indexes."""
    conditions: list[str] = []
    params: list[Any] = []

    def param(value: Any) -> str:
        params.append(value)
        return f"${next_param + len(params) - 1}"

    if where.text:
        conditions.append(f"{_SEARCHED} ILIKE {param(_like(where.text))}")
    if where.check_type is not None:
        conditions.append(f"r.checks @> {param([{'type': where.check_type}])}")
    if where.severity is not None:
        conditions.append(f"r.checks @> {param([{'severity': where.severity}])}")
    if where.judged is not None:
        conditions.append(_JUDGED if where.judged else f"NOT {_JUDGED}")
    if where.tag is not None:
        conditions.append(f"r.tags @> {param([where.tag])}::text[]")
    if where.failed_in_run is not None:
        conditions.append(
            "EXISTS (SELECT 1 FROM case_results cr WHERE cr.run_id = "
            f"{param(where.failed_in_run)} AND cr.test_case_id = c.id AND cr.outcome = 'failed')"
        )
    return conditions, params


def _like(text: str) -> str:
    """An ILIKE pattern matching the text anywhere, its wildcards taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def find_test_cases(
    pool: asyncpg.Pool, dataset_id: UUID, where: CaseFilter, after_seq: int, limit: int
) -> list[TestCase]:
    """One page of a dataset's cases matching the filter, in their order."""
    conditions, params = _filter_sql(where, next_param=4)
    query = (
        _SELECT
        + "WHERE c.dataset_id = $1 AND c.seq > $2"
        + "".join(f" AND {condition}" for condition in conditions)
        + " ORDER BY c.seq LIMIT $3"
    )
    if not conditions:
        rows = await pool.fetch(query, dataset_id, after_seq, limit)
        return [_case(row) for row in rows]
    async with pool.acquire() as connection, connection.transaction():
        # Whether to walk the cases in order or look the matches up in an index depends on how
        # many match. A cached generic plan cannot know, and walks 100,000 cases for a filter
        # that matches none, a hundred times slower; a plan for these very values knows.
        await connection.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        rows = await connection.fetch(query, dataset_id, after_seq, limit, *params)
    return [_case(row) for row in rows]


_REVISIONS_BY_ID = f"""
SELECT r.id, r.revision, r.created_at, {", ".join(f"r.{name}" for name in _CONTENT_FIELDS)}
FROM test_case_revisions r WHERE r.id = ANY($1::uuid[])
"""


async def revisions_by_id(executor: Executor, revision_ids: Sequence[UUID]) -> dict[UUID, Revision]:
    """The revisions with these ids (a run's results name the revisions they graded)."""
    rows = await executor.fetch(_REVISIONS_BY_ID, list(revision_ids))
    return {
        row["id"]: Revision(
            revision=row["revision"], created_at=row["created_at"], content=content_of(row)
        )
        for row in rows
    }


_REVISIONS = f"""
SELECT r.revision, r.created_at, {", ".join(f"r.{name}" for name in _CONTENT_FIELDS)}
FROM test_case_revisions r
JOIN test_cases c ON c.id = r.test_case_id
JOIN datasets d ON d.id = c.dataset_id
WHERE d.project_id = $1 AND r.test_case_id = $2
ORDER BY r.revision DESC
LIMIT $3
"""


async def revisions(
    executor: Executor, project_id: UUID, test_case_id: UUID, limit: int
) -> list[Revision]:
    """The case's revisions, newest first (none when it is not in this project)."""
    rows = await executor.fetch(_REVISIONS, project_id, test_case_id, limit)
    return [
        Revision(revision=row["revision"], created_at=row["created_at"], content=content_of(row))
        for row in rows
    ]
