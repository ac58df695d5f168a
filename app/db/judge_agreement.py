"""What the judge's agreement with people is computed from: per criterion of a dataset, the
confusion counts of the judge's verdicts against people's, and the disagreements.

Labels given on a case's current revision count (an edited case starts afresh; earlier ones are
counted apart), and only results the judge gave a verdict on. Several people on one result: the
majority's verdict counts, and a tie is left out. Each is one aggregate over review_votes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor
from agentlasso.domain.judge_agreement import Confusion
from agentlasso.domain.review import JudgedKind

# review_votes holds a row per labelled (result, judged check), recounted as labels are saved.
_COUNTS = """
SELECT v.kind, v.criterion, v.current, v.check_id,
       count(*) FILTER (WHERE 2 * v.yes > v.votes AND v.judge_passed) AS both_passed,
       count(*) FILTER (WHERE 2 * v.yes < v.votes AND NOT v.judge_passed) AS both_failed,
       count(*) FILTER (WHERE 2 * v.yes < v.votes AND v.judge_passed)
           AS judge_passed_human_failed,
       count(*) FILTER (WHERE 2 * v.yes > v.votes AND NOT v.judge_passed)
           AS judge_failed_human_passed,
       count(*) FILTER (WHERE 2 * v.yes = v.votes) AS ties,
       coalesce(sum((v.yes * (v.yes - 1) + (v.votes - v.yes) * (v.votes - v.yes - 1)) / 2), 0)
           ::bigint AS reviewer_pairs_agreed,
       coalesce(sum(v.votes * (v.votes - 1) / 2), 0)::bigint AS reviewer_pairs,
       -- Per reply judged more than once, the share of its samples' pairs that agree; then
       -- their mean, each reply counting once (agentlasso.domain.judge_agreement's definition).
       avg(
           (v.samples_passed * (v.samples_passed - 1)
            + (v.samples - v.samples_passed) * (v.samples - v.samples_passed - 1))
           ::double precision / nullif(v.samples * (v.samples - 1), 0)
       ) FILTER (WHERE v.samples >= 2) AS self_consistency,
       count(*) FILTER (WHERE v.samples >= 2) AS sampled
FROM review_votes v
WHERE v.project_id = $1 AND v.dataset_id = $2 AND v.judge_passed IS NOT NULL
GROUP BY 1, 2, 3, 4
"""
# Each criterion's newest disagreements on current revisions, from the partial index.
_DISAGREEMENTS = """
SELECT d.* FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS k (kind, criterion, place)
CROSS JOIN LATERAL (
    SELECT v.kind, v.criterion, v.check_id, v.run_id, v.test_case_id, v.trial, v.judge_passed,
           v.item_id, v.labelled_at, v.notes
    FROM review_votes v
    WHERE v.dataset_id = $2 AND v.project_id = $1
      AND v.kind = k.kind AND coalesce(v.criterion, '') = k.criterion
      AND v.judge_passed IS NOT NULL AND 2 * v.yes <> v.votes
      AND (2 * v.yes > v.votes) <> v.judge_passed AND v.current
    ORDER BY v.labelled_at DESC
    LIMIT $5
) d
ORDER BY k.place, d.labelled_at DESC
"""


class CriterionCounts(msgspec.Struct, frozen=True, kw_only=True):
    """One criterion's labelled results, counted: on its cases' current revisions, or on
    earlier ones (`current` False)."""

    kind: JudgedKind
    criterion: str | None
    current: bool
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
    # How often repeated judging of one reply agreed (the mean over the `sampled` replies judged
    # more than once); None where none was.
    self_consistency: float | None
    sampled: int

    def plus(self, other: CriterionCounts) -> CriterionCounts:
        """The counts of one criterion under another check id added to these."""
        consistency = [
            (share, n)
            for share, n in (
                (self.self_consistency, self.sampled),
                (other.self_consistency, other.sampled),
            )
            if share is not None
        ]
        return CriterionCounts(
            kind=self.kind,
            criterion=self.criterion,
            current=self.current,
            check_ids=tuple(sorted({*self.check_ids, *other.check_ids})),
            **{name: getattr(self, name) + getattr(other, name) for name in _SUMMED},
            self_consistency=(
                sum(share * n for share, n in consistency) / sum(n for _, n in consistency)
                if consistency
                else None
            ),
        )

    def confusion(self) -> Confusion:
        """The judge's verdicts against the people's majority, as the figures take them."""
        return Confusion(
            both_passed=self.both_passed,
            both_failed=self.both_failed,
            judge_passed_human_failed=self.judge_passed_human_failed,
            judge_failed_human_passed=self.judge_failed_human_passed,
        )


_SUMMED = (
    "both_passed",
    "both_failed",
    "judge_passed_human_failed",
    "judge_failed_human_passed",
    "ties",
    "reviewer_pairs",
    "reviewer_pairs_agreed",
    "sampled",
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
    executor: Executor, project_id: UUID, dataset_id: UUID
) -> list[CriterionCounts]:
    """Every judged criterion of the dataset with labels, counted apart on its cases' current
    revisions and on earlier ones (before the cases last changed)."""
    by_key: dict[tuple[str, str | None, bool], CriterionCounts] = {}
    for row in await executor.fetch(_COUNTS, project_id, dataset_id):
        fields = dict(row)
        check_id = fields.pop("check_id")
        one = CriterionCounts(**fields, check_ids=(check_id,))
        key = (one.kind, one.criterion, one.current)
        by_key[key] = one if key not in by_key else by_key[key].plus(one)
    return list(by_key.values())


async def disagreements(
    executor: Executor,
    project_id: UUID,
    dataset_id: UUID,
    criteria: Sequence[tuple[str, str | None]],
    per_criterion: int,
) -> list[Disagreement]:
    """The newest disagreements of each of these (kind, criterion), at most `per_criterion`
    of each, criterion by criterion in the order given."""
    kinds = [kind for kind, _ in criteria]
    texts = [criterion or "" for _, criterion in criteria]
    rows = await executor.fetch(_DISAGREEMENTS, project_id, dataset_id, kinds, texts, per_criterion)
    return [Disagreement(**row) for row in rows]
