"""The judge's agreement with people, per criterion of a dataset (contract section 15).

The counts come from one aggregate (app/db/judge_agreement.py); the figures from them are pure
(agentlasso.domain.judge_agreement). Self-consistency and people's agreement with each other
are shares of agreeing pairs: of the judge's samples of one reply (the mean over replies), of
people on one result (pooled).
"""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

import msgspec

from agentlasso.db import datasets as dataset_rows
from agentlasso.db import judge_agreement as rows
from agentlasso.db.judge_agreement import CriterionCounts, Disagreement
from agentlasso.domain.judge_agreement import Agreement, agreement_figures, share
from agentlasso.errors import NotFound
from agentlasso.services.platform import Platform

# The disagreements listed with each criterion, newest first.
DISAGREEMENTS_SHOWN = 50


class CriterionAgreement(msgspec.Struct, frozen=True, kw_only=True):
    """One judged criterion's figures, and where the judge and people differ."""

    counts: CriterionCounts
    figures: Agreement
    # The same criterion's figures over labels given on earlier revisions of its cases (before
    # they last changed); None when there are none.
    earlier: Agreement | None
    disagreements: tuple[Disagreement, ...]

    @property
    def self_consistency(self) -> float | None:
        """How often repeated judging of one reply agreed; None without samples."""
        return self.counts.self_consistency

    @property
    def reviewer_agreement(self) -> float | None:
        """Share of agreeing pairs of people on one result; None where no result has two
        labels."""
        return share(self.counts.reviewer_pairs_agreed, self.counts.reviewer_pairs)


Key = tuple[str, str | None]


def _by_key(counted: list[CriterionCounts]) -> dict[Key, CriterionCounts]:
    return {(counts.kind, counts.criterion): counts for counts in counted}


def _in_order(keys: Iterable[Key]) -> list[Key]:
    """llm_judge criteria by their text, then the expectation."""
    return sorted(set(keys), key=lambda key: (key[0] != "llm_judge", key[1] or ""))


async def dataset_agreement(
    platform: Platform, project_id: UUID, dataset_id: UUID
) -> list[CriterionAgreement]:
    """Every judged criterion of the dataset with labels, on its cases' current revisions and
    on earlier ones (before the cases last changed: new calibration examples, say); NotFound
    for another project's dataset."""
    if await dataset_rows.get_dataset(platform.pool, project_id, dataset_id) is None:
        raise NotFound("No dataset with this id in your project.")
    pool = platform.pool
    counted = await rows.criterion_counts(pool, project_id, dataset_id)
    current = _by_key([counts for counts in counted if counts.current])
    earlier = _by_key([counts for counts in counted if not counts.current])
    keys = _in_order([*current, *earlier])
    differing = await rows.disagreements(
        pool, project_id, dataset_id, [key for key in keys if key in current], DISAGREEMENTS_SHOWN
    )
    by_criterion: dict[Key, list[Disagreement]] = {}
    for found in differing:
        by_criterion.setdefault((found.kind, found.criterion), []).append(found)
    found_criteria = []
    for key in keys:
        before = earlier.get(key)
        counts = current.get(key) or no_labels(before)
        found_criteria.append(
            CriterionAgreement(
                counts=counts,
                figures=agreement_figures(counts.confusion()),
                earlier=None if before is None else agreement_figures(before.confusion()),
                disagreements=tuple(by_criterion.get(key, ())),
            )
        )
    return found_criteria


def no_labels(earlier: CriterionCounts | None) -> CriterionCounts:
    """A criterion labelled only on earlier revisions, as its current revisions count it."""
    assert earlier is not None, "a criterion is listed because some revision has labels"
    return CriterionCounts(
        kind=earlier.kind,
        criterion=earlier.criterion,
        current=True,
        check_ids=earlier.check_ids,
        both_passed=0,
        both_failed=0,
        judge_passed_human_failed=0,
        judge_failed_human_passed=0,
        ties=0,
        reviewer_pairs=0,
        reviewer_pairs_agreed=0,
        self_consistency=None,
        sampled=0,
    )
