"""Generated cases in the web app: the Generate cases form, and the review queue where each
draft is accepted, edited (in the rubric editor), rejected, regenerated or previewed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath

from agentlasso.domain.case_drafts import CATEGORIES, CATEGORY_LABELS, CaseDraft
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.errors import Conflict, InvalidInput, NotFound, TooManyRequests, Unavailable
from agentlasso.http.auth import PlatformDep
from agentlasso.http.generation_asks import ask_of
from agentlasso.http.pagination import parse_id
from agentlasso.http.problems import status_of
from agentlasso.schemas.case_drafts import GenerationCreate
from agentlasso.services import agents as agent_service
from agentlasso.services import case_drafts as draft_service
from agentlasso.services import case_generation
from agentlasso.services import preview as preview_service
from agentlasso.services.platform import Platform
from agentlasso.web.case_editor import EDITOR_URL, act, editor_for, preview_view
from agentlasso.web.forms import by_field, checked, json_field, optional_text, text
from agentlasso.web.objects import dataset_named
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import session_of

REVIEW_LIMIT = 500
AGENTS_OFFERED = 100
TYPED_IN = ""


class GenerationPages(Controller):
    """Generating a dataset's cases, and reviewing them."""

    @get("/datasets/{dataset_id:str}/generate", name="generate_cases_form")
    async def generate_form(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """The form: which agent (or its prompt and tools typed in), an instruction, a count."""
        dataset = await dataset_named(request, platform, dataset_id)
        return await _generate_form(request, platform, dataset, {"count": "10"}, {})

    @post("/datasets/{dataset_id:str}/generate", name="generate_cases")
    async def generate(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Generate; then to the review queue, or back to the form saying what went wrong."""
        dataset = await dataset_named(request, platform, dataset_id)
        form = await request.form()
        errors: dict[str, str] = {}
        payload = _generation_fields(form, errors)
        written = checked(payload, GenerationCreate, errors) if not errors else None
        if written is None:
            return await _generate_form(request, platform, dataset, form, errors, 422)
        project_id = session_of(request).project_id
        try:
            done = await case_generation.generate_cases(
                platform, project_id, dataset.id, ask_of(written)
            )
        except InvalidInput as exc:
            errors = by_field(exc.errors)
            errors = {("agent" if name == "agent_id" else name): e for name, e in errors.items()}
            return await _generate_form(request, platform, dataset, form, errors, 422)
        except (Conflict, NotFound, TooManyRequests, Unavailable) as exc:
            return await _generate_form(
                request, platform, dataset, form, {"": exc.detail}, status_of(exc)
            )
        made, dropped = len(done.drafts), len(done.discarded)
        return redirect(
            request, f"/datasets/{dataset.id}/drafts?generated={made}&discarded={dropped}"
        )

    @get("/datasets/{dataset_id:str}/drafts", name="case_drafts")
    async def drafts(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """The drafts awaiting review, by kind of case, with the coverage so far."""
        dataset = await dataset_named(request, platform, dataset_id)
        return await _review(request, platform, dataset)

    @post("/datasets/{dataset_id:str}/drafts/{draft_id:str}/{action:str}", name="draft_action")
    async def draft_action(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str],
        draft_id: FromPath[str], action: FromPath[str],
    ) -> Response[Any]:  # fmt: skip
        """Accept, reject, regenerate or preview one draft."""
        dataset = await dataset_named(request, platform, dataset_id)
        project_id = session_of(request).project_id
        draft = await draft_service.draft_or_missing(
            platform, project_id, dataset.id, parse_id(draft_id, "draft")
        )
        back = f"/datasets/{dataset.id}/drafts"
        try:
            if action == "accept":
                await draft_service.accept_draft(
                    platform, project_id, dataset.id, draft.id, lambda content: content
                )
                return redirect(request, f"{back}?accepted=1")
            if action == "reject":
                await draft_service.reject_draft(platform, project_id, dataset.id, draft.id)
                return redirect(request, f"{back}?rejected=1")
            if action == "regenerate":
                await case_generation.regenerate_draft(platform, project_id, dataset.id, draft.id)
                return redirect(request, f"{back}?regenerated=1")
            if action == "preview":
                return await _review(request, platform, dataset, previewed=draft)
        except (Conflict, InvalidInput, TooManyRequests, Unavailable) as exc:
            status = status_of(exc)
            return await _review(
                request, platform, dataset, problem=(draft.id, exc.detail), status_code=status
            )
        raise NotFound("No such action on a draft.")

    @get("/datasets/{dataset_id:str}/drafts/{draft_id:str}/edit", name="edit_draft")
    async def edit_form(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str],
        draft_id: FromPath[str],
    ) -> Response[Any]:  # fmt: skip
        """The rubric editor, filled in from the draft; Save accepts it."""
        dataset, draft = await _pending_draft(request, platform, dataset_id, draft_id)
        request.state[EDITOR_URL] = f"/datasets/{dataset.id}/drafts/{draft.id}/edit"
        return editor_for(request, dataset, draft.content)

    @post("/datasets/{dataset_id:str}/drafts/{draft_id:str}/edit", name="edit_draft_action")
    async def edit(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str],
        draft_id: FromPath[str],
    ) -> Response[Any]:  # fmt: skip
        """An action in the draft's editor: add or remove a check, preview, or save (accept)."""
        dataset, draft = await _pending_draft(request, platform, dataset_id, draft_id)
        request.state[EDITOR_URL] = f"/datasets/{dataset.id}/drafts/{draft.id}/edit"
        project_id = session_of(request).project_id

        async def accept(content: TestCaseContent) -> str:
            case, _ = await draft_service.accept_draft(
                platform, project_id, dataset.id, draft.id, lambda _: content
            )
            return f"/cases/{case.id}?saved=1"

        return await act(request, platform, dataset, None, store=accept)


async def _pending_draft(
    request: Request[Any, Any, Any], platform: Platform, dataset_id: str, draft_id: str
) -> tuple[Dataset, CaseDraft]:
    dataset = await dataset_named(request, platform, dataset_id)
    draft = await draft_service.draft_or_missing(
        platform, session_of(request).project_id, dataset.id, parse_id(draft_id, "draft")
    )
    return dataset, draft_service.pending_or_conflict(draft)


def _generation_fields(form: Mapping[str, Any], errors: dict[str, str]) -> dict[str, Any]:
    """The form as the API's request: blanks left out, the tools as JSON, the count a number."""
    payload: dict[str, Any] = {}
    agent = text(form, "agent")
    if agent != TYPED_IN:
        payload["agent_id"] = agent
    for name in ("system_prompt", "instruction"):
        value = optional_text(form, name)
        if value is not None:
            payload[name] = value
    tools = json_field(form, "tools", errors, want=list)
    if tools is not None:
        payload["tools"] = tools
    count = text(form, "count").strip() or "10"
    if count.isdigit():
        payload["count"] = int(count)
    else:
        errors["count"] = "A whole number from 1 to 20."
    return payload


async def _generate_form(
    request: Request[Any, Any, Any], platform: Platform, dataset: Dataset,
    values: Mapping[str, Any], errors: dict[str, str], status_code: int = 200,
) -> Response[Any]:  # fmt: skip
    project_id = session_of(request).project_id
    agents = await agent_service.list_agents(platform, project_id, 0, AGENTS_OFFERED)
    default = await agent_service.default_agent(platform, project_id)
    chosen = text(values, "agent") if "agent" in values else (str(default.id) if default else "")
    choices = [(TYPED_IN, "None: use the prompt and tools typed below")] + [
        (str(agent.id), agent.name) for agent in agents
    ]
    return page(
        request, "generate_cases.html", status_code=status_code, dataset=dataset,
        values=values, errors=errors, choices=choices, chosen=chosen,
    )  # fmt: skip


async def _review(
    request: Request[Any, Any, Any], platform: Platform, dataset: Dataset, *,
    previewed: CaseDraft | None = None, problem: tuple[UUID, str] | None = None,
    status_code: int = 200,
) -> Response[Any]:  # fmt: skip
    project_id = session_of(request).project_id
    pending = await draft_service.list_drafts(
        platform, project_id, dataset.id, "pending", 0, REVIEW_LIMIT
    )
    coverage = await draft_service.coverage(platform, project_id, dataset.id)
    preview = None
    if previewed is not None:
        try:
            outcome = await preview_service.preview_with_agent(
                platform, project_id, previewed.content, dataset.data_context, None
            )
            preview = (previewed.id, preview_view(outcome))
        except (Conflict, InvalidInput, TooManyRequests) as exc:
            problem = (previewed.id, exc.detail)
    groups = [
        (category, CATEGORY_LABELS[category], [d for d in pending if d.category == category])
        for category in CATEGORIES
    ]
    bars = [
        (category, CATEGORY_LABELS[category], counts["pending"] + counts["accepted"])
        for category, counts in coverage.items()
    ]
    return page(
        request, "case_drafts.html", status_code=status_code, dataset=dataset,
        groups=[g for g in groups if g[2]], pending_ids={draft.id for draft in pending},
        pending=len(pending), bars=bars, most=max([n for _, _, n in bars] + [1]),
        preview=preview, problem=problem,
        notices=dict(request.query_params),
    )  # fmt: skip
