"""A dataset's Judge agreement (contract section 15): per judged criterion, how far people agree
with the AI judge, the disagreements a click away, and Make an example of one."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath

from agentlasso.db.judge_agreement import Disagreement
from agentlasso.domain.judge_agreement import Agreement
from agentlasso.domain.review import Verdict
from agentlasso.errors import FieldError, InvalidInput
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.services import datasets as dataset_service
from agentlasso.services import judge_agreement as service
from agentlasso.services import judge_examples
from agentlasso.web.forms import optional_text, text
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import session_of

# Said beside every interval: how it was computed (docs/ say more).
KAPPA_METHOD = (
    "95% interval: Jeffreys prior on the four cells of the confusion matrix, kappa computed "
    "for 2,000 draws of its Dirichlet posterior (the 2.5th and 97.5th percentiles)."
)
UNDEFINED_KAPPA = "undefined (one class only)"


def kappa_text(kappa: float | None) -> str:
    """Cohen's kappa as a person reads it; never a number when it is undefined."""
    return UNDEFINED_KAPPA if kappa is None else f"{kappa:.2f}"


def _disagreement(found: Disagreement) -> dict[str, Any]:
    trial = "" if found.trial == 1 else f"?trial={found.trial}"
    return {
        "found": found,
        "judge": "passed" if found.judge_passed else "failed",
        "people": "failed" if found.judge_passed else "passed",
        "case_url": f"/runs/{found.run_id}/cases/{found.test_case_id}{trial}",
        "review_url": f"/review/{found.item_id}",
        "can_example": found.kind == "llm_judge",
    }


def _interval(figures: Agreement) -> str | None:
    low_high = figures.kappa_ci95
    return None if low_high is None else f"{low_high[0]:.2f} to {low_high[1]:.2f}"


def _earlier(figures: Agreement | None) -> dict[str, Any] | None:
    if figures is None:
        return None
    return {"figures": figures, "kappa": kappa_text(figures.cohen_kappa),
            "interval": _interval(figures)}  # fmt: skip


def _criterion(found: service.CriterionAgreement, index: int) -> dict[str, Any]:
    figures = found.figures
    return {
        "index": index,
        "counts": found.counts,
        "figures": figures,
        "kappa": kappa_text(figures.cohen_kappa),
        "interval": _interval(figures),
        "earlier": _earlier(found.earlier),
        "self_consistency": found.self_consistency,
        "reviewer_agreement": found.reviewer_agreement,
        "disagreements": [_disagreement(each) for each in found.disagreements],
    }  # fmt: skip


class AgreementPages(Controller):
    """/datasets/{id}/judge-agreement and its Make an example form."""

    path = "/datasets/{dataset_id:str}/judge-agreement"

    @get("/", name="judge_agreement")
    async def agreement(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """A table of the dataset's judged criteria with their figures, and each criterion's
        disagreements."""
        project_id = session_of(request).project_id
        found = parse_id(dataset_id, "dataset")
        dataset = await dataset_service.get_dataset(platform, project_id, found)
        criteria = await service.dataset_agreement(platform, project_id, found)
        query = request.query_params
        return page(
            request, "judge_agreement.html", dataset=dataset,
            criteria=[_criterion(each, index) for index, each in enumerate(criteria)],
            method=KAPPA_METHOD, example_revision=query.get("example"),
        )  # fmt: skip

    @post("/examples", name="make_judge_example")
    async def example(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Make a disagreement an example of its criterion: the people's verdict and notes go
        on the case's check, as a new revision of the case."""
        found = parse_id(dataset_id, "dataset")
        form = await request.form()
        verdict = text(form, "verdict")
        if verdict not in ("passed", "failed"):
            detail = "The example's verdict is passed or failed."
            raise InvalidInput(detail, [FieldError(pointer="/verdict", detail=detail)])
        labelled: tuple[Any, Verdict, str | None] = (
            parse_id(text(form, "review_item_id"), "review item"),
            verdict,  # type: ignore[assignment]
            optional_text(form, "note"),
        )
        case = await judge_examples.add_example(
            platform,
            session_of(request).project_id,
            parse_id(text(form, "test_case_id"), "test case"),
            text(form, "check_id"),
            labelled,
        )
        return redirect(request, f"/datasets/{found}/judge-agreement?example={case.revision}")
