"""The review queue of generated cases: list, accept (the case joins the dataset through the
ordinary test-case service), reject. Nothing joins the dataset without acceptance."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any
from uuid import UUID

from agentlasso.db import case_drafts as draft_rows
from agentlasso.db import datasets as dataset_rows
from agentlasso.domain.case_drafts import (
    CATEGORIES,
    Candidate,
    CaseDraft,
    Category,
    DraftStatus,
    GenerationRecord,
)
from agentlasso.domain.test_cases import ContentWarning, TestCase, TestCaseContent
from agentlasso.errors import Conflict, NotFound
from agentlasso.services.platform import Platform
from agentlasso.services.test_cases import (
    add_test_case,
    prepare_content,
    regex_warnings,
)

_MISSING = "No draft with this id in this dataset of your project."


async def list_drafts(
    platform: Platform, project_id: UUID, dataset_id: UUID, status: DraftStatus | None,
    after_seq: int, limit: int,
) -> list[CaseDraft]:  # fmt: skip
    """A page of the dataset's drafts, oldest first, of one status or all."""
    await _require_dataset(platform, project_id, dataset_id)
    return await draft_rows.list_drafts(
        platform.pool, project_id, dataset_id, status, after_seq, limit
    )


async def draft_or_missing(
    platform: Platform, project_id: UUID, dataset_id: UUID, draft_id: UUID
) -> CaseDraft:
    """The draft; NotFound when it is not in this dataset of the project."""
    draft = await draft_rows.get_draft(platform.pool, project_id, dataset_id, draft_id)
    if draft is None:
        raise NotFound(_MISSING)
    return draft


def pending_or_conflict(draft: CaseDraft) -> CaseDraft:
    """The draft if it still awaits review; Conflict saying what became of it otherwise."""
    if draft.status != "pending":
        raise Conflict(f"This draft was already {draft.status}.")
    return draft


async def accept_draft(
    platform: Platform,
    project_id: UUID,
    dataset_id: UUID,
    draft_id: UUID,
    change: Callable[[TestCaseContent], TestCaseContent],
) -> tuple[TestCase, list[ContentWarning]]:
    """Add the draft (with `change` applied: edits made in review) to the dataset as a test
    case, validated and revisioned like any other; the draft records which."""
    draft = pending_or_conflict(await draft_or_missing(platform, project_id, dataset_id, draft_id))
    content = prepare_content(change(draft.content))  # an invalid edit is refused here
    # One transaction, the draft locked: two acceptances cannot make two cases, and a case is
    # never made without its draft saying so (nor a draft accepted without its case).
    async with platform.pool.acquire() as connection, connection.transaction():
        locked = await draft_rows.lock_draft(connection, project_id, dataset_id, draft_id)
        if locked is None:
            raise NotFound(_MISSING)
        pending_or_conflict(locked)
        case = await add_test_case(platform, connection, project_id, dataset_id, content)
        await draft_rows.decide(connection, project_id, draft_id, "accepted", test_case_id=case.id)
    return case, regex_warnings(content)


async def reject_draft(
    platform: Platform, project_id: UUID, dataset_id: UUID, draft_id: UUID
) -> None:
    """Reject a pending draft (rejecting it again changes nothing); Conflict if accepted."""
    draft = await draft_or_missing(platform, project_id, dataset_id, draft_id)
    if draft.status == "rejected":
        return
    pending_or_conflict(draft)
    if not await draft_rows.decide(platform.pool, project_id, draft_id, "rejected"):
        raise Conflict("This draft was accepted meanwhile.")


async def coverage(
    platform: Platform, project_id: UUID, dataset_id: UUID
) -> dict[Category, dict[DraftStatus, int]]:
    """How many drafts of each kind, by status, every kind listed (the coverage bar)."""
    counted = await draft_rows.counts(platform.pool, project_id, dataset_id)
    table: dict[Category, dict[DraftStatus, int]] = {
        category: {"pending": 0, "accepted": 0, "rejected": 0} for category in CATEGORIES
    }
    for (status, category), count in counted.items():
        if category in table:
            table[category][status] = count
    return table


def draft_rows_of(
    project_id: UUID, record: GenerationRecord, candidates: list[Candidate]
) -> list[tuple[Any, ...]]:
    """The drafts' rows (draft_rows.DRAFT_INSERT_COLUMNS) for a generation's candidates."""
    return [_draft_row(project_id, record, candidate) for candidate in candidates]


def _draft_row(project_id: UUID, record: GenerationRecord, candidate: Candidate) -> tuple[Any, ...]:
    slot, content = candidate.slot, candidate.content
    return (
        uuid.uuid4(), project_id, record.dataset_id, record.id, slot.category, slot.tool,
        slot.intent, content.input, content.description, content.checks or (),
        content.expected_output, content.evaluation_type, content.min_confidence,
        list(candidate.tools_expected), list(candidate.tools_forbidden),
    )  # fmt: skip


async def _require_dataset(platform: Platform, project_id: UUID, dataset_id: UUID) -> None:
    if await dataset_rows.get_dataset(platform.pool, project_id, dataset_id) is None:
        raise NotFound("No dataset with this id in your project.")
