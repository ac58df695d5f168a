"""What the judge's agreement with people is computed from: per criterion of a dataset, the
confusion counts of the judge's verdicts against people's, and the disagreements.

Only labels given on a case's current revision count (an edited case starts afresh), and only
results the judge gave a verdict on. Several people on one result: the majority's verdict
counts, and a tie is left out. Both are one aggregate over review_check_labels.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor
from agentlasso.domain.judge_agreement import Confusion
from agentlasso.domain.review import JudgedKind

# One row per labelled (result, check): the judge's verdict, people's votes, the samples.
_VOTED = """
WITH voted AS (
    SELECT l.kind, l.criterion, l.check_id, l.run_id, l.test_case_id, l.trial,
           bool_and(l.judge_passed) AS judge_passed,
           count(*) FILTER (WHERE l.human_passed) AS yes,
           count(*) AS votes,
           max(l.judge_samples) AS samples,
           max(l.judge_samples_passed) AS samples_passed,
           max(l.created_at) AS labelled_at,
           (array_agg(l.item_id))[1] AS item_id,
           string_agg(l.note, ' / ' ORDER BY l.created_at) AS notes
    FROM review_check_labels l
    JOIN test_cases c ON c.id = l.test_case_id
    WHERE l.project_id = $1 AND l.dataset_id = $2 AND l.judge_passed IS NOT NULL
      AND (c.current_revision_id = l.revision_id) = $3
    GROUP BY l.kind, l.criterion, l.check_id, l.run_id, l.test_case_id, l.trial
)
"""
_COUNTS = (
    _VOTED
    + """
SELECT kind, criterion, array_agg(DISTINCT check_id ORDER BY check_id) AS check_ids,
       count(*) FILTER (WHERE 2 * yes > votes AND judge_passed) AS both_passed,
       count(*) FILTER (WHERE 2 * yes < votes AND NOT judge_passed) AS both_failed,
       count(*) FILTER (WHERE 2 * yes < votes AND judge_passed) AS judge_passed_human_failed,
       count(*) FILTER (WHERE 2 * yes > votes AND NOT judge_passed) AS judge_failed_human_passed,
       count(*) FILTER (WHERE 2 * yes = votes) AS ties,
       coalesce(sum((yes * (yes - 1) + (votes - yes) * (votes - yes - 1)) / 2), 0)::bigint
           AS reviewer_pairs_agreed,
       coalesce(sum(votes * (votes - 1) / 2), 0)::bigint AS reviewer_pairs,
       -- Per reply judged more than once, the share of its samples' pairs that agree; then
       -- their mean, each reply counting once (agentlasso.domain.judge_agreement's definition).
       avg(
           (samples_passed * (samples_passed - 1)
            + (samples - samples_passed) * (samples - samples_passed - 1))::double precision
           / nullif(samples * (samples - 1), 0)
       ) FILTER (WHERE samples >= 2) AS self_consistency
FROM voted GROUP BY kind, criterion ORDER BY kind DESC, criterion
"""
)
_DISAGREEMENTS = (
    _VOTED
    + """
SELECT kind, criterion, check_id, run_id, test_case_id, trial, judge_passed, item_id,
       labelled_at, notes
FROM (
    SELECT *, row_number() OVER (PARTITION BY kind, criterion ORDER BY labelled_at DESC) AS n
    FROM voted WHERE 2 * yes <> votes AND (2 * yes > votes) <> judge_passed
) d
WHERE n <= $4
ORDER BY kind DESC, criterion, labelled_at DESC
"""
)


class CriterionCounts(msgspec.Struct, frozen=True, kw_only=True):
    """One criterion's labelled results, counted."""

    kind: JudgedKind
    criterion: str | None
    check_ids: tuple[str, ...]
    both_passed: int
    both_failed: int
    judge_passed_human_failed: int
    judge_failed_human_passed: int
    # Results whose reviewers split evenly: left out of the figures.
    ties: int
    # Pairs of people on one result, and how many of those pairs agreed.
    reviewer_pairs: int
    reviewer_pairs_agreed: int
    # How often repeated judging of one reply agreed; None where no reply was judged twice.
    self_consistency: float | None

    def confusion(self) -> Confusion:
        """The judge's verdicts against the people's majority, as the figures take them."""
        return Confusion(
            both_passed=self.both_passed,
            both_failed=self.both_failed,
            judge_passed_human_failed=self.judge_passed_human_failed,
            judge_failed_human_passed=self.judge_failed_human_passed,
        )


class Disagreement(msgspec.Struct, frozen=True, kw_only=True):
    """A labelled result where the judge and the people's majority differ."""

    kind: JudgedKind
    criterion: str | None
    check_id: str
    run_id: UUID
    test_case_id: UUID
    trial: int
    judge_passed: bool
    item_id: UUID
    labelled_at: datetime
    notes: str | None


async def criterion_counts(
    executor: Executor, project_id: UUID, dataset_id: UUID, *, current: bool = True
) -> list[CriterionCounts]:
    """Every judged criterion of the dataset that has labels on a case's current revision (or,
    `current=False`, on an earlier revision: before the case last changed)."""
    rows = await executor.fetch(_COUNTS, project_id, dataset_id, current)
    return [CriterionCounts(**{**row, "check_ids": tuple(row["check_ids"])}) for row in rows]


async def disagreements(
    executor: Executor, project_id: UUID, dataset_id: UUID, per_criterion: int
) -> list[Disagreement]:
    """The newest disagreements of each criterion, at most `per_criterion` of each."""
    rows = await executor.fetch(_DISAGREEMENTS, project_id, dataset_id, True, per_criterion)
    return [Disagreement(**row) for row in rows]
