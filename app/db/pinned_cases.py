"""A run's pinned cases: the revisions it grades, in dataset order."""

from __future__ import annotations

import functools
from uuid import UUID

import asyncpg

from agentlasso.db.pool import Connection, Executor
from agentlasso.db.test_cases import content_of
from agentlasso.domain.test_cases import PinnedCase
from agentlasso.off_loop import off_loop_when_many

_PINNED_AT_POSITIONS = """
SELECT p.position, p.test_case_id, p.revision_id, r.input, r.conversation, r.checks_version,
       r.checks, r.evaluation_criteria_json, r.expected_output, r.evaluation_type, r.min_confidence,
       r.description, r.tags, r.tool_fixtures
FROM eval_run_cases p
JOIN test_case_revisions r ON r.id = p.revision_id
WHERE p.run_id = $1 AND p.position = ANY($2::int[])
"""

_PINNED_PAGE = """
SELECT p.position, p.test_case_id, p.revision_id, r.input, r.conversation, r.checks_version,
       r.checks, r.evaluation_criteria_json, r.expected_output, r.evaluation_type, r.min_confidence,
       r.description, r.tags, r.tool_fixtures
FROM eval_run_cases p
JOIN test_case_revisions r ON r.id = p.revision_id
WHERE p.run_id = $1 AND p.position > $2
ORDER BY p.position
LIMIT $3
"""

# Cases fetched per query when a CI batch is graded.
PINNED_PAGE = 2_000
_PINNED_CASES_BY_ID = """
SELECT p.position, p.test_case_id, p.revision_id, r.input, r.conversation, r.checks_version,
       r.checks, r.evaluation_criteria_json, r.expected_output, r.evaluation_type, r.min_confidence,
       r.description, r.tags, r.tool_fixtures
FROM unnest($2::uuid[]) AS k(test_case_id)
JOIN eval_run_cases p ON p.run_id = $1 AND p.test_case_id = k.test_case_id
JOIN test_case_revisions r ON r.id = p.revision_id
"""


def _pinned(row: asyncpg.Record) -> PinnedCase:
    return PinnedCase(
        position=row["position"],
        test_case_id=row["test_case_id"],
        revision_id=row["revision_id"],
        content=content_of(row),
    )


async def pinned_at_positions(
    executor: Executor, run_id: UUID, positions: list[int]
) -> list[PinnedCase]:
    """The pinned cases at these positions (1-based, in dataset order)."""
    return [_pinned(row) for row in await executor.fetch(_PINNED_AT_POSITIONS, run_id, positions)]


async def pinned_page(
    executor: Executor, run_id: UUID, after_position: int, limit: int
) -> list[PinnedCase]:
    """A page of the run's pinned cases in dataset order, after a position."""
    rows = await executor.fetch(_PINNED_PAGE, run_id, after_position, limit)
    return [_pinned(row) for row in rows]


async def pinned_cases_by_id(
    connection: Connection, run_id: UUID, test_case_ids: list[UUID]
) -> dict[UUID, PinnedCase]:
    """The pinned revisions of these cases by id (those not in the run are simply absent)."""
    pinned: dict[UUID, PinnedCase] = {}
    # A page at a time: the rows of one result are decoded in one go, holding the event loop.
    for start in range(0, len(test_case_ids), PINNED_PAGE):
        page = test_case_ids[start : start + PINNED_PAGE]
        rows = await connection.fetch(_PINNED_CASES_BY_ID, run_id, page)
        pinned |= await off_loop_when_many(len(rows), functools.partial(_pinned_by_id, rows))
    return pinned


def _pinned_by_id(rows: list[asyncpg.Record]) -> dict[UUID, PinnedCase]:
    return {row["test_case_id"]: _pinned(row) for row in rows}
