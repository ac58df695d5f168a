"""The review queue's rows: items (a run's case results or traces) and people's labels of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.review import (
    JudgedCheck,
    Reviewer,
    ReviewItem,
    ReviewLabel,
    ReviewStatus,
    StoredCheckLabel,
)

_ITEM_COLUMNS = """
i.id, i.project_id, i.seq, i.run_id, i.test_case_id, i.trial, i.dataset_id, i.trace_id,
i.assignee_id, u.email AS assignee_email, i.done_at, i.created_at,
(SELECT count(*) FROM review_labels l WHERE l.item_id = i.id) AS label_count
"""

# A sample is drawn at random; without a limit every matching result is queued, in run order.
# A result already queued stays as it was (with its labels).
_ENQUEUE_RESULTS = """
INSERT INTO review_items (id, project_id, run_id, test_case_id, trial, dataset_id, assignee_id)
SELECT gen_random_uuid(), $1, r.run_id, r.test_case_id, r.trial, $3, $7
FROM (
    SELECT run_id, test_case_id, trial FROM case_results
    WHERE run_id = $2
      AND ($4::text IS NULL OR outcome = $4)
      AND ($5::text IS NULL OR check_results @> jsonb_build_array(jsonb_build_object('type', $5)))
    ORDER BY CASE WHEN $6::integer IS NULL THEN seq::double precision ELSE random() END
    LIMIT $6
) r
ON CONFLICT (project_id, run_id, test_case_id, trial) WHERE run_id IS NOT NULL DO NOTHING
"""
_ENQUEUE_TRACES = """
INSERT INTO review_items (id, project_id, trace_id, assignee_id)
SELECT gen_random_uuid(), $1, t.trace_id, $3
FROM traces t WHERE t.project_id = $1 AND t.trace_id = ANY($2::text[])
ON CONFLICT (project_id, trace_id) WHERE trace_id IS NOT NULL DO NOTHING
"""
_KNOWN_TRACES = "SELECT trace_id FROM traces WHERE project_id = $1 AND trace_id = ANY($2::text[])"
_LIST = f"""
SELECT {_ITEM_COLUMNS}
FROM review_items i LEFT JOIN users u ON u.id = i.assignee_id
WHERE i.project_id = $1
  AND ($2::text IS NULL OR ($2 = 'pending') = (i.done_at IS NULL))
  AND (NOT $3::boolean OR i.assignee_id IS NULL)
  AND ($4::uuid IS NULL OR i.assignee_id = $4)
  AND ($5::bigint IS NULL OR i.seq > $5)
ORDER BY i.seq
LIMIT $6
"""
_GET = f"""
SELECT {_ITEM_COLUMNS}
FROM review_items i LEFT JOIN users u ON u.id = i.assignee_id
WHERE i.project_id = $1 AND i.id = $2
"""
_LABELS = """
SELECT l.reviewer, l.reviewer_name, l.verdict, l.note, l.corrected_output, l.created_at,
       l.updated_at,
       coalesce((
           SELECT jsonb_agg(jsonb_build_object(
               'check_id', c.check_id, 'kind', c.kind, 'criterion', c.criterion,
               'human_passed', c.human_passed, 'judge_passed', c.judge_passed, 'note', c.note
           ) ORDER BY c.check_id)
           FROM review_check_labels c
           WHERE c.item_id = l.item_id AND c.reviewer = l.reviewer
       ), '[]'::jsonb) AS checks
FROM review_labels l WHERE l.item_id = $1 ORDER BY l.created_at, l.reviewer
"""
_UPSERT_LABEL = """
INSERT INTO review_labels (item_id, reviewer, reviewer_name, verdict, note, corrected_output)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (item_id, reviewer) DO UPDATE SET
    reviewer_name = EXCLUDED.reviewer_name, verdict = EXCLUDED.verdict, note = EXCLUDED.note,
    corrected_output = EXCLUDED.corrected_output, updated_at = now()
"""
_CLEAR_CHECK_LABELS = "DELETE FROM review_check_labels WHERE item_id = $1 AND reviewer = $2"
_INSERT_CHECK_LABEL = """
INSERT INTO review_check_labels (
    item_id, reviewer, check_id, project_id, dataset_id, test_case_id, revision_id, run_id,
    trial, kind, criterion, human_passed, judge_passed, judge_samples, judge_samples_passed, note
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
"""
# The item's judged checks' votes, recounted from its labels (the caller holds the item's row).
_RECOUNT_VOTES = """
WITH counted AS (
    SELECT item_id, check_id, project_id, dataset_id, test_case_id, revision_id, run_id, trial,
           kind, criterion, bool_and(judge_passed) AS judge_passed,
           count(*) FILTER (WHERE human_passed) AS yes, count(*) AS votes,
           max(judge_samples) AS samples, max(judge_samples_passed) AS samples_passed,
           max(created_at) AS labelled_at, string_agg(note, ' / ' ORDER BY created_at) AS notes
    FROM review_check_labels WHERE item_id = $1
    GROUP BY item_id, check_id, project_id, dataset_id, test_case_id, revision_id, run_id,
             trial, kind, criterion
), gone AS (
    DELETE FROM review_votes v
    WHERE v.item_id = $1 AND NOT EXISTS (SELECT 1 FROM counted c WHERE c.check_id = v.check_id)
)
INSERT INTO review_votes (
    item_id, check_id, project_id, dataset_id, test_case_id, revision_id, run_id, trial, kind,
    criterion, judge_passed, yes, votes, samples, samples_passed, labelled_at, notes, current
)
SELECT counted.*, counted.revision_id = $2 FROM counted
ON CONFLICT (item_id, check_id) DO UPDATE SET
    yes = EXCLUDED.yes, votes = EXCLUDED.votes, labelled_at = EXCLUDED.labelled_at,
    notes = EXCLUDED.notes, current = EXCLUDED.current
"""
_LOCK_ITEM = "SELECT 1 FROM review_items WHERE id = $1 FOR UPDATE"
# Held until the labels are stored, so an edit of the case cannot slip between reading its
# current revision and the votes that say whether they are of it.
_CURRENT_REVISION = "SELECT current_revision_id FROM test_cases WHERE id = $1 FOR SHARE"
# The assignee's label finishes an assigned item; anyone's an unassigned one.
_MARK_DONE = """
UPDATE review_items SET done_at = now()
WHERE id = $1 AND done_at IS NULL AND (assignee_id IS NULL OR assignee_id = $2)
"""
_NEXT_PENDING = """
SELECT i.id FROM review_items i
WHERE i.project_id = $1 AND i.done_at IS NULL AND i.id <> $2
  AND (i.assignee_id IS NULL OR i.assignee_id = $3)
  AND NOT EXISTS (SELECT 1 FROM review_labels l WHERE l.item_id = i.id AND l.reviewer = $4)
ORDER BY (i.seq <= $5), i.seq
LIMIT 1
"""
_PROGRESS = """
SELECT l.reviewer_name AS name, count(*) AS labelled
FROM review_labels l JOIN review_items i ON i.id = l.item_id
WHERE i.project_id = $1 GROUP BY l.reviewer, l.reviewer_name ORDER BY labelled DESC, name
"""
_COUNTS = """
SELECT count(*) FILTER (WHERE done_at IS NULL) AS pending,
       count(*) FILTER (WHERE done_at IS NOT NULL) AS done
FROM review_items WHERE project_id = $1
"""


def _item(row: asyncpg.Record) -> ReviewItem:
    return ReviewItem(**row)


async def enqueue_results(
    executor: Executor,
    project_id: UUID,
    run_id: UUID,
    dataset_id: UUID,
    outcome: str | None,
    check_type: str | None,
    limit: int | None,
    assignee_id: UUID | None,
) -> int:
    """Queue the run's results that match (a random `limit` of them, when given); how many
    were new to the queue."""
    status: str = await executor.execute(
        _ENQUEUE_RESULTS, project_id, run_id, dataset_id, outcome, check_type, limit, assignee_id
    )
    return int(status.split()[-1])


async def known_traces(executor: Executor, project_id: UUID, trace_ids: Sequence[str]) -> set[str]:
    """Which of these traces the project has."""
    rows = await executor.fetch(_KNOWN_TRACES, project_id, list(trace_ids))
    return {row["trace_id"] for row in rows}


async def enqueue_traces(
    executor: Executor, project_id: UUID, trace_ids: Sequence[str], assignee_id: UUID | None
) -> int:
    """Queue the project's traces of these ids; how many were new to the queue."""
    status: str = await executor.execute(_ENQUEUE_TRACES, project_id, list(trace_ids), assignee_id)
    return int(status.split()[-1])


async def list_items(
    executor: Executor,
    project_id: UUID,
    status: ReviewStatus | None,
    assignee: UUID | None,
    unassigned: bool,
    after_seq: int | None,
    limit: int,
) -> list[ReviewItem]:
    """A page of the queue in the order it was filled: of one status, of one assignee's or of
    nobody's (`unassigned`), or any."""
    rows = await executor.fetch(_LIST, project_id, status, unassigned, assignee, after_seq, limit)
    return [_item(row) for row in rows]


async def get_item(executor: Executor, project_id: UUID, item_id: UUID) -> ReviewItem | None:
    """The project's review item, or None (another project's included)."""
    row = await executor.fetchrow(_GET, project_id, item_id)
    return None if row is None else _item(row)


async def labels_of(executor: Executor, item_id: UUID) -> list[ReviewLabel]:
    """Every person's labels of the item, in the order they were first given."""
    rows = await executor.fetch(_LABELS, item_id)
    return [_label(dict(row)) for row in rows]


def _label(fields: dict[str, Any]) -> ReviewLabel:
    checks = fields.pop("checks")
    return ReviewLabel(**fields, checks=tuple(StoredCheckLabel(**check) for check in checks))


async def save_label(
    connection: Connection,
    item: ReviewItem,
    reviewer: Reviewer,
    user_id: UUID | None,
    label: tuple[bool | None, str | None, str | None],
    revision_id: UUID | None,
    checks: Sequence[tuple[JudgedCheck, bool, str | None]],
) -> None:
    """Store (or replace) one person's labels of the item: its overall (verdict, note,
    corrected output), and each judged check's (what the judge said, the person's verdict,
    note)."""
    verdict, note, corrected = label
    # One writer of an item's labels at a time, so its votes count every person's.
    await connection.execute(_LOCK_ITEM, item.id)
    await connection.execute(
        _UPSERT_LABEL, item.id, reviewer.key, reviewer.name, verdict, note, corrected
    )
    await connection.execute(_CLEAR_CHECK_LABELS, item.id, reviewer.key)
    if checks:
        await connection.executemany(
            _INSERT_CHECK_LABEL,
            [
                (
                    item.id,
                    reviewer.key,
                    judged.check_id,
                    item.project_id,
                    item.dataset_id,
                    item.test_case_id,
                    revision_id,
                    item.run_id,
                    item.trial,
                    judged.kind,
                    judged.criterion,
                    human_passed,
                    judged.judge_passed,
                    len(judged.samples),
                    sum(judged.samples),
                    check_note,
                )
                for judged, human_passed, check_note in checks
            ],
        )
    current = await connection.fetchval(_CURRENT_REVISION, item.test_case_id)
    if current is not None:  # a deleted case's labels are kept on the item, counted nowhere
        await connection.execute(_RECOUNT_VOTES, item.id, current)
    await connection.execute(_MARK_DONE, item.id, user_id)


async def next_pending(
    executor: Executor,
    project_id: UUID,
    after: ReviewItem,
    reviewer: Reviewer,
    user_id: UUID | None,
) -> UUID | None:
    """The next item this reviewer has still to label (after this one, then from the start)."""
    found: UUID | None = await executor.fetchval(
        _NEXT_PENDING, project_id, after.id, user_id, reviewer.key, after.seq
    )
    return found


async def progress(executor: Executor, project_id: UUID) -> tuple[int, int, list[tuple[str, int]]]:
    """The queue's pending and done counts, and how many items each reviewer has labelled."""
    counts = await executor.fetchrow(_COUNTS, project_id)
    assert counts is not None, "an aggregate always answers a row"
    rows = await executor.fetch(_PROGRESS, project_id)
    return counts["pending"], counts["done"], [(row["name"], row["labelled"]) for row in rows]
