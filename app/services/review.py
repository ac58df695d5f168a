"""The review queue (contract section 15): filling it from a run or from traces, listing it, and
recording people's labels.

A person labels only what the judge decided (the result's `llm_judge` checks and its
`expectation`), beside an overall verdict, a note and a corrected reply. A label keeps the
case's revision, so an edited case starts afresh while the old labels stay readable.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import msgspec

from agentlasso.db import memberships
from agentlasso.db import review_items as rows
from agentlasso.domain.audit import Caller, UserActor
from agentlasso.domain.case_results import StoredResult
from agentlasso.domain.checks import LlmJudge
from agentlasso.domain.review import (
    MAX_CORRECTED_OUTPUT_CHARS,
    CheckLabel,
    JudgedCheck,
    ReviewItem,
    ReviewLabel,
    ReviewStatus,
    Verdict,
    judged_checks,
    reviewer_of,
)
from agentlasso.domain.stored_text import refuse_nul
from agentlasso.domain.web import Revision
from agentlasso.errors import FieldError, InvalidInput, NotFound
from agentlasso.grading.plan import plan_case
from agentlasso.services import runs as run_service
from agentlasso.services.platform import Platform

_MISSING_ITEM = "No review item with this id in your project."


class PostedLabel(msgspec.Struct, frozen=True, kw_only=True):
    """One person's labels of an item, as posted (already decoded and bounded)."""

    verdict: Verdict | None = None
    checks: tuple[CheckLabel, ...] = ()
    note: str | None = None
    corrected_output: str | None = None


def _refuse(pointer: str, detail: str) -> InvalidInput:
    return InvalidInput(detail, [FieldError(pointer=pointer, detail=detail)])


async def member_id(platform: Platform, project_id: UUID, email: str) -> UUID | None:
    """The organisation member with this email (compared without case); None when nobody in
    the organisation has it."""
    organisation_id = await memberships.organisation_of_project(platform.pool, project_id)
    for member in await memberships.members(platform.pool, organisation_id, project_id):
        if member.email.lower() == email.lower():
            return member.user_id
    return None


async def assignee_id(platform: Platform, project_id: UUID, email: str | None) -> UUID | None:
    """The member an item is assigned to, or a 422 naming /assignee; None when no one is
    named."""
    if email is None:
        return None
    found = await member_id(platform, project_id, email)
    if found is None:
        raise _refuse("/assignee", "No member of your organisation has this email.")
    return found


async def enqueue_results(
    platform: Platform,
    project_id: UUID,
    run_id: UUID,
    which: tuple[str | None, str | None, int | None],
    assignee: UUID | None,
) -> int:
    """Queue a run's case results: all, of one outcome, with a check of one type, and/or a
    random sample of `limit`; how many were new to the queue."""
    outcome, check_type, limit = which
    run = await run_service.get_run(platform, project_id, run_id)
    return await rows.enqueue_results(
        platform.pool, project_id, run.id, run.dataset_id, outcome, check_type, limit, assignee
    )


async def enqueue_traces(
    platform: Platform, project_id: UUID, trace_ids: Sequence[str], assignee: UUID | None
) -> int:
    """Queue these traces of the project; a 422 naming the first one it does not have."""
    refuse_nul({"trace_ids": list(trace_ids)})
    known = await rows.known_traces(platform.pool, project_id, trace_ids)
    for index, trace_id in enumerate(trace_ids):
        if trace_id not in known:
            raise _refuse(f"/trace_ids/{index}", "No trace with this id in your project.")
    return await rows.enqueue_traces(platform.pool, project_id, trace_ids, assignee)


async def list_items(
    platform: Platform,
    project_id: UUID,
    status: ReviewStatus | None,
    assignee: tuple[UUID | None, bool],
    after_seq: int | None,
    limit: int,
) -> list[ReviewItem]:
    """A page of the queue, in the order it was filled."""
    user_id, unassigned = assignee
    return await rows.list_items(
        platform.pool, project_id, status, user_id, unassigned, after_seq, limit
    )


async def get_item(platform: Platform, project_id: UUID, item_id: UUID) -> ReviewItem:
    """The project's item, or NotFound (another project's included)."""
    item = await rows.get_item(platform.pool, project_id, item_id)
    if item is None:
        raise NotFound(_MISSING_ITEM)
    return item


async def labels_of(platform: Platform, item: ReviewItem) -> list[ReviewLabel]:
    """Every person's labels of the item, side by side."""
    return await rows.labels_of(platform.pool, item.id)


async def result_of(platform: Platform, item: ReviewItem) -> tuple[StoredResult, Revision]:
    """The labelled case result of a result item, and the revision it graded."""
    run_id, test_case_id, trial = item.run_id, item.test_case_id, item.trial
    assert run_id is not None, "a result item names its run"
    assert test_case_id is not None, "a result item names its case"
    assert trial is not None, "a result item names its trial"
    _, result, graded = await run_service.result_of_case(
        platform, item.project_id, run_id, test_case_id, trial
    )
    return result, graded


def judged_of(result: StoredResult, graded: Revision) -> dict[str, JudgedCheck]:
    """The result's judged checks, with the criteria of the revision it graded."""
    criteria = {
        check.id or "": check.criterion
        for check in plan_case(graded.content).checks
        if isinstance(check, LlmJudge)
    }
    samples = {record.check_id: record.samples for record in result.judge_records or ()}
    floor = graded.content.min_confidence / 100
    return judged_checks(result.result.check_results, criteria, samples, floor)


def _checked_labels(
    posted: PostedLabel, judged: dict[str, JudgedCheck]
) -> list[tuple[JudgedCheck, bool, str | None]]:
    seen: set[str] = set()
    labels: list[tuple[JudgedCheck, bool, str | None]] = []
    for index, check in enumerate(posted.checks):
        pointer = f"/checks/{index}/check_id"
        if check.check_id in seen:
            raise _refuse(pointer, "This check is labelled twice in one label.")
        seen.add(check.check_id)
        found = judged.get(check.check_id)
        if found is None:
            raise _refuse(
                pointer,
                "This result has no AI-judge check or expectation with this id: only what the "
                "judge decided is labelled.",
            )
        labels.append((found, check.verdict == "passed", check.note))
    return labels


def _refuse_empty_or_long(posted: PostedLabel) -> None:
    refuse_nul(msgspec.to_builtins(posted))
    if posted.verdict is None and not posted.checks and posted.corrected_output is None:
        raise _refuse(
            "/verdict", "A label needs a verdict, a check's verdict or a corrected reply."
        )
    if posted.corrected_output is not None and (
        len(posted.corrected_output) > MAX_CORRECTED_OUTPUT_CHARS
    ):
        raise _refuse(
            "/corrected_output",
            f"A corrected reply may be {MAX_CORRECTED_OUTPUT_CHARS:,} characters at most.",
        )


async def record_label(
    platform: Platform, project_id: UUID, caller: Caller, item_id: UUID, posted: PostedLabel
) -> list[ReviewLabel]:
    """Store the caller's labels of the item (replacing their earlier ones); everyone's labels
    of it after."""
    _refuse_empty_or_long(posted)
    item = await get_item(platform, project_id, item_id)
    if item.trace_id is not None:
        if posted.checks:
            raise _refuse("/checks", "A trace has no checks to label: give a verdict.")
        checks: list[tuple[JudgedCheck, bool, str | None]] = []
        revision_id = None
    else:
        result, graded = await result_of(platform, item)
        checks = _checked_labels(posted, judged_of(result, graded))
        revision_id = result.revision_id
    reviewer = reviewer_of(caller.actor)
    user_id = caller.actor.id if isinstance(caller.actor, UserActor) else None
    verdict = None if posted.verdict is None else posted.verdict == "passed"
    async with platform.pool.acquire() as connection, connection.transaction():
        await rows.save_label(
            connection,
            item,
            reviewer,
            user_id,
            (verdict, posted.note, posted.corrected_output),
            revision_id,
            checks,
        )
    return await rows.labels_of(platform.pool, item.id)


async def progress(platform: Platform, project_id: UUID) -> tuple[int, int, list[tuple[str, int]]]:
    """The queue's pending and done counts, and how many items each reviewer has labelled."""
    return await rows.progress(platform.pool, project_id)


async def next_to_label(platform: Platform, caller: Caller, after: ReviewItem) -> UUID | None:
    """The next pending item of the project the caller has still to label (after this one, then
    from the start of the queue); None when there is none."""
    user_id = caller.actor.id if isinstance(caller.actor, UserActor) else None
    return await rows.next_pending(
        platform.pool, after.project_id, after, reviewer_of(caller.actor), user_id
    )
