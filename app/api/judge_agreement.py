"""/api/v1/datasets/{id}/judge-agreement: how far people agree with the judge, per criterion."""

from __future__ import annotations

from litestar import Controller, get
from litestar.params import FromPath

from agentlasso.db.judge_agreement import Disagreement
from agentlasso.domain.judge_agreement import KAPPA_CI_METHOD, Agreement, Confusion
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import parse_id
from agentlasso.schemas.judge_agreement import (
    ConfusionOut,
    CriterionAgreementOut,
    DisagreementOut,
    EarlierAgreementOut,
    JudgeAgreementOut,
)
from agentlasso.services import judge_agreement as service


def _disagreement_out(found: Disagreement) -> DisagreementOut:
    case = f"/runs/{found.run_id}/cases/{found.test_case_id}"
    return DisagreementOut(
        check_id=found.check_id,
        run_id=found.run_id,
        test_case_id=found.test_case_id,
        trial=found.trial,
        judge_verdict="passed" if found.judge_passed else "failed",
        human_verdict="failed" if found.judge_passed else "passed",
        review_item_id=found.item_id,
        labelled_at=found.labelled_at,
        notes=found.notes,
        case_url=case if found.trial == 1 else f"{case}?trial={found.trial}",
        review_url=f"/review/{found.item_id}",
    )


def criterion_out(found: service.CriterionAgreement) -> CriterionAgreementOut:
    """The API shape of one criterion's agreement."""
    counts, figures = found.counts, found.figures
    return CriterionAgreementOut(
        kind=counts.kind,
        criterion=counts.criterion,
        check_ids=list(counts.check_ids),
        labelled=figures.labelled,
        ties=counts.ties,
        agreement=figures.agreement,
        cohen_kappa=figures.cohen_kappa,
        kappa_ci95=figures.kappa_ci95,
        kappa_ci_method=KAPPA_CI_METHOD,
        human_pass_rate=figures.human_pass_rate,
        judge_pass_rate=figures.judge_pass_rate,
        true_positive_rate=figures.true_positive_rate,
        true_negative_rate=figures.true_negative_rate,
        confusion=_confusion_out(figures.confusion),
        disagreements=[_disagreement_out(each) for each in found.disagreements],
        self_consistency=found.self_consistency,
        reviewer_agreement=found.reviewer_agreement,
        earlier_revisions=None if found.earlier is None else _earlier_out(found.earlier),
    )


def _confusion_out(confusion: Confusion) -> ConfusionOut:
    return ConfusionOut(
        both_passed=confusion.both_passed,
        both_failed=confusion.both_failed,
        judge_passed_human_failed=confusion.judge_passed_human_failed,
        judge_failed_human_passed=confusion.judge_failed_human_passed,
    )


def _earlier_out(figures: Agreement) -> EarlierAgreementOut:
    return EarlierAgreementOut(
        labelled=figures.labelled,
        agreement=figures.agreement,
        cohen_kappa=figures.cohen_kappa,
        kappa_ci95=figures.kappa_ci95,
        confusion=_confusion_out(figures.confusion),
    )


class JudgeAgreementController(Controller):
    """The judge's agreement with people, per criterion of a dataset."""

    path = "/datasets/{dataset_id:str}/judge-agreement"
    tags = ("review",)

    @get(operation_id="getJudgeAgreement")
    async def agreement(
        self, platform: PlatformDep, project_id: ProjectId, dataset_id: FromPath[str]
    ) -> JudgeAgreementOut:
        """Per judged criterion of the dataset: labelled results, raw agreement, Cohen's kappa
        with its 95% interval, base rate, the judge's rates, the confusion matrix, the newest
        disagreements, self-consistency."""
        found = parse_id(dataset_id, "dataset")
        criteria = await service.dataset_agreement(platform, project_id, found)
        return JudgeAgreementOut(
            dataset_id=found, criteria=[criterion_out(each) for each in criteria]
        )
