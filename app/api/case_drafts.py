"""Generated cases: /api/v1/datasets/{id}/generate and the review queue of its drafts."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from litestar import Controller, get, post
from litestar.params import FromPath, JSONBody, QueryParameter

from agentlasso.api.test_cases import case_out
from agentlasso.domain import case_drafts as domain
from agentlasso.domain.case_drafts import Category, DraftStatus
from agentlasso.domain.checks import Check, WrittenChecks
from agentlasso.domain.judging import Usage
from agentlasso.domain.test_cases import CaseInput, Confidence, EvaluationType, TestCaseContent
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.generation_asks import ask_of
from agentlasso.http.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    decode_cursor,
    next_cursor,
    parse_id,
)
from agentlasso.schemas.case_drafts import GenerationCreate
from agentlasso.schemas.test_cases import TestCase, with_edits
from agentlasso.services import case_drafts as drafts
from agentlasso.services import case_generation as generation

StatusFilter = Annotated[
    DraftStatus | None, QueryParameter(description="Only drafts of this status.")
]


class DraftAccept(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Edits made in review; absent fields keep the draft's."""

    input: CaseInput | msgspec.UnsetType = msgspec.UNSET
    checks: WrittenChecks | msgspec.UnsetType = msgspec.UNSET
    expected_output: str | msgspec.UnsetType | None = msgspec.UNSET
    evaluation_type: EvaluationType | msgspec.UnsetType = msgspec.UNSET
    min_confidence: Confidence | msgspec.UnsetType = msgspec.UNSET
    description: str | msgspec.UnsetType | None = msgspec.UNSET

    def apply(self, current: TestCaseContent) -> TestCaseContent:
        """The draft's content with these edits."""
        return with_edits(current, self)


class CaseDraft(msgspec.Struct, kw_only=True):
    """A generated case awaiting review: accepted, it becomes a test case."""

    id: str
    dataset_id: str
    generation_id: str
    status: DraftStatus
    # The kind of case, and the plan's intent and tool ("" for none) it fills.
    category: Category
    intent: str
    tool: str
    input: CaseInput
    # Why it exists.
    description: str | None
    checks: tuple[Check, ...]
    expected_output: str | None
    evaluation_type: EvaluationType
    min_confidence: int
    tools_expected: tuple[str, ...]
    tools_forbidden: tuple[str, ...]
    # Accepted: the test case it became. Regenerated: the draft that replaced it.
    test_case_id: str | None
    replaced_by: str | None
    created_at: datetime


class CaseDraftPage(msgspec.Struct, kw_only=True):
    """A page of drafts."""

    items: list[CaseDraft]
    next_cursor: str | None


class GenerationUsage(msgspec.Struct, kw_only=True):
    """What the model calls of a generation cost."""

    generation_id: str
    model: str
    prompt_version: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    # null: a model this server has no price for.
    cost_usd: float | None
    latency_ms: int


class Discarded(msgspec.Struct, kw_only=True):
    """A candidate that did not become a draft, and why."""

    category: str
    reason: str


class GeneratedDrafts(msgspec.Struct, kw_only=True):
    """A generation's drafts (pending review) and its usage."""

    drafts: list[CaseDraft]
    usage: GenerationUsage
    # Candidates dropped: a tool the agent lacks, an invalid check, a near-duplicate...
    discarded: list[Discarded]
    # The deadline (AGENTLASSO_GENERATION_DEADLINE_S) came first: these are what was ready.
    timed_out: bool


def draft_out(draft: domain.CaseDraft) -> CaseDraft:
    """The API shape of a draft."""
    return CaseDraft(
        id=str(draft.id), dataset_id=str(draft.dataset_id),
        generation_id=str(draft.generation_id), status=draft.status, category=draft.category,
        intent=draft.intent, tool=draft.tool, input=draft.input, description=draft.description,
        checks=draft.checks, expected_output=draft.expected_output,
        evaluation_type=draft.evaluation_type, min_confidence=draft.min_confidence,
        tools_expected=draft.tools_expected, tools_forbidden=draft.tools_forbidden,
        test_case_id=None if draft.test_case_id is None else str(draft.test_case_id),
        replaced_by=None if draft.replaced_by is None else str(draft.replaced_by),
        created_at=draft.created_at,
    )  # fmt: skip


def usage_out(record: domain.GenerationRecord) -> GenerationUsage:
    """The API shape of a generation's usage."""
    tokens: Usage = record.usage
    return GenerationUsage(
        generation_id=str(record.id), model=record.model, prompt_version=record.prompt_version,
        calls=record.calls, input_tokens=tokens.input_tokens, output_tokens=tokens.output_tokens,
        cache_creation_input_tokens=tokens.cache_creation_input_tokens,
        cache_read_input_tokens=tokens.cache_read_input_tokens, cost_usd=record.cost_usd,
        latency_ms=record.latency_ms,
    )  # fmt: skip


class CaseDraftController(Controller):
    """Generating cases for a dataset, and reviewing them."""

    path = "/datasets/{dataset_id:str}"
    tags = ("generated cases",)

    @post("/generate", operation_id="generateCases", status_code=201)
    async def generate(
        self, platform: PlatformDep, project_id: ProjectId, dataset_id: FromPath[str],
        data: JSONBody[GenerationCreate],
    ) -> GeneratedDrafts:  # fmt: skip
        """Ask the model for candidate cases from the agent's prompt and tools; they wait as
        pending drafts, and none joins the dataset until it is accepted."""
        done = await generation.generate_cases(
            platform, project_id, parse_id(dataset_id, "dataset"), ask_of(data)
        )
        return GeneratedDrafts(
            drafts=[draft_out(draft) for draft in done.drafts],
            usage=usage_out(done.generation),
            discarded=[Discarded(category=d.category, reason=d.reason) for d in done.discarded],
            timed_out=done.timed_out,
        )

    @get("/drafts", operation_id="listCaseDrafts")
    async def list(
        self, platform: PlatformDep, project_id: ProjectId, dataset_id: FromPath[str],
        status: StatusFilter = None, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None,
    ) -> CaseDraftPage:  # fmt: skip
        """The dataset's drafts, oldest first, a page at a time."""
        found = await drafts.list_drafts(
            platform, project_id, parse_id(dataset_id, "dataset"), status,
            decode_cursor(cursor), limit + 1,
        )  # fmt: skip
        return CaseDraftPage(
            items=[draft_out(draft) for draft in found[:limit]],
            next_cursor=next_cursor([draft.seq for draft in found], limit),
        )

    @post("/drafts/{draft_id:str}/accept", operation_id="acceptCaseDraft", status_code=201)
    async def accept(
        self, platform: PlatformDep, project_id: ProjectId, dataset_id: FromPath[str],
        draft_id: FromPath[str], data: JSONBody[DraftAccept | None] = None,
    ) -> TestCase:  # fmt: skip
        """Add the draft to the dataset as a test case (with any edits given): the same
        validation and revision as creating a case."""
        edits = data or DraftAccept()
        case, warnings = await drafts.accept_draft(
            platform, project_id, parse_id(dataset_id, "dataset"), parse_id(draft_id, "draft"),
            edits.apply,
        )  # fmt: skip
        return case_out(case, warnings)

    @post("/drafts/{draft_id:str}/reject", operation_id="rejectCaseDraft", status_code=204)
    async def reject(
        self, platform: PlatformDep, project_id: ProjectId, dataset_id: FromPath[str],
        draft_id: FromPath[str],
    ) -> None:  # fmt: skip
        """Reject the draft: it never joins the dataset."""
        await drafts.reject_draft(
            platform, project_id, parse_id(dataset_id, "dataset"), parse_id(draft_id, "draft")
        )

    @post("/drafts/{draft_id:str}/regenerate", operation_id="regenerateCaseDraft", status_code=201)
    async def regenerate(
        self, platform: PlatformDep, project_id: ProjectId, dataset_id: FromPath[str],
        draft_id: FromPath[str],
    ) -> CaseDraft:  # fmt: skip
        """A new draft for the same kind of case and intent; the old one is rejected, its
        `replaced_by` naming the new one."""
        draft, _ = await generation.regenerate_draft(
            platform, project_id, parse_id(dataset_id, "dataset"), parse_id(draft_id, "draft")
        )
        return draft_out(draft)
