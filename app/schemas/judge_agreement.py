"""The judge's agreement with people on the wire: per criterion, the figures and the
disagreements (contract section 15)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import msgspec

from agentlasso.domain.review import JudgedKind, Verdict


class ConfusionOut(msgspec.Struct, kw_only=True):
    """The judge's verdicts against people's, counted."""

    both_passed: int
    both_failed: int
    judge_passed_human_failed: int
    judge_failed_human_passed: int


class DisagreementOut(msgspec.Struct, kw_only=True):
    """A labelled result where the judge and people (their majority) differ."""

    check_id: str
    run_id: UUID
    test_case_id: UUID
    trial: int
    judge_verdict: Verdict
    human_verdict: Verdict
    review_item_id: UUID
    labelled_at: datetime
    notes: str | None
    # The result's case card in the web app, and its review item.
    case_url: str
    review_url: str


class EarlierAgreementOut(msgspec.Struct, kw_only=True):
    """The criterion's figures over labels given before its cases last changed (new
    calibration examples, say): the agreement before, beside the current figures."""

    labelled: int
    agreement: float | None
    cohen_kappa: float | None
    kappa_ci95: tuple[float, float] | None
    confusion: ConfusionOut


class CriterionAgreementOut(msgspec.Struct, kw_only=True):
    """One judged criterion: an llm_judge criterion (by its text) or the expectation.

    `labelled` counts results with both a judge verdict and people's (a tie between people is
    left out: `ties`). `cohen_kappa` is null when it is undefined (one class only);
    `kappa_ci95` is its 95% interval (`kappa_ci_method` says how it was computed)."""

    kind: JudgedKind
    criterion: str | None
    check_ids: list[str]
    labelled: int
    ties: int
    agreement: float | None
    cohen_kappa: float | None
    kappa_ci95: tuple[float, float] | None
    kappa_ci_method: str
    human_pass_rate: float | None
    judge_pass_rate: float | None
    true_positive_rate: float | None
    true_negative_rate: float | None
    confusion: ConfusionOut
    disagreements: list[DisagreementOut]
    self_consistency: float | None
    reviewer_agreement: float | None
    earlier_revisions: EarlierAgreementOut | None


class JudgeAgreementOut(msgspec.Struct, kw_only=True):
    """The judge's agreement with people on each of a dataset's judged criteria."""

    dataset_id: UUID
    criteria: list[CriterionAgreementOut]
