"""The judge's agreement with people, per criterion of a dataset (contract section 15).

The counts come from one aggregate (app/db/judge_agreement.py); the figures from them are pure
(agentlasso.domain.judge_agreement). Self-consistency and people's agreement with each other
are shares of agreeing pairs: of the judge's samples of one reply (the mean over replies), of
people on one result (pooled).
"""

from __future__ import annotations

from uuid import UUID

import msgspec

from agentlasso.db import datasets as dataset_rows
from agentlasso.db import judge_agreement as rows
from agentlasso.db.judge_agreement import CriterionCounts, Disagreement
from agentlasso.domain.judge_agreement import Agreement, agreement_figures
from agentlasso.errors import NotFound
from agentlasso.services.platform import Platform

# The disagreements listed with each criterion, newest first.
DISAGREEMENTS_SHOWN = 50


class CriterionAgreement(msgspec.Struct, frozen=True, kw_only=True):
    """One judged criterion's figures, and where the judge and people differ."""

    counts: CriterionCounts
    figures: Agreement
    disagreements: tuple[Disagreement, ...]
    # Share of agreeing pairs of the judge's samples of one reply; None without samples.
    self_consistency: float | None
    # Share of agreeing pairs of people on one result; None where no result has two labels.
    reviewer_agreement: float | None


def _share(agreed: int, pairs: int) -> float | None:
    return None if pairs == 0 else agreed / pairs


async def dataset_agreement(
    platform: Platform, project_id: UUID, dataset_id: UUID
) -> list[CriterionAgreement]:
    """Every judged criterion of the dataset with labels on a current revision; NotFound for
    another project's dataset."""
    if await dataset_rows.get_dataset(platform.pool, project_id, dataset_id) is None:
        raise NotFound("No dataset with this id in your project.")
    counted = await rows.criterion_counts(platform.pool, project_id, dataset_id)
    differing = await rows.disagreements(platform.pool, project_id, dataset_id, DISAGREEMENTS_SHOWN)
    by_criterion: dict[tuple[str, str | None], list[Disagreement]] = {}
    for found in differing:
        by_criterion.setdefault((found.kind, found.criterion), []).append(found)
    return [
        CriterionAgreement(
            counts=counts,
            figures=agreement_figures(counts.confusion()),
            disagreements=tuple(by_criterion.get((counts.kind, counts.criterion), ())),
            self_consistency=counts.self_consistency,
            reviewer_agreement=_share(counts.reviewer_pairs_agreed, counts.reviewer_pairs),
        )
        for counts in counted
    ]
