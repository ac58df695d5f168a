"""/api/v1/review-items: the review queue, an item, and people's labels of it (section 15)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from agentlasso.api.run_results import stored_result_out
from agentlasso.api.test_cases import case_out
from agentlasso.domain.review import ReviewItem, ReviewLabel, ReviewStatus
from agentlasso.errors import FieldError, InvalidInput
from agentlasso.http.auth import CallerDep, PlatformDep, ProjectId
from agentlasso.http.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    body_id,
    decode_cursor,
    next_cursor,
    parse_id,
)
from agentlasso.schemas.review import (
    CaseFromReviewedTrace,
    CheckLabelOut,
    Enqueued,
    LabelOut,
    LabelPost,
    ReviewEnqueue,
    ReviewerProgress,
    ReviewItemOut,
    ReviewItemPage,
)
from agentlasso.schemas.test_cases import TestCase
from agentlasso.services import review as service
from agentlasso.services import reviewed_traces

AssigneeFilter = Annotated[
    str | None,
    QueryParameter(
        min_length=1,
        max_length=320,
        description="Only items assigned to this member (their email), or `none` for items "
        "nobody is assigned.",
    ),
]


def _verdict(passed: bool | None) -> str | None:
    return None if passed is None else "passed" if passed else "failed"


def label_out(label: ReviewLabel) -> LabelOut:
    """The API shape of one person's labels."""
    return LabelOut(
        reviewer=label.reviewer_name,
        verdict=_verdict(label.verdict),  # type: ignore[arg-type]
        note=label.note,
        corrected_output=label.corrected_output,
        checks=[
            CheckLabelOut(
                check_id=check.check_id,
                kind=check.kind,
                criterion=check.criterion,
                verdict="passed" if check.human_passed else "failed",
                judge_verdict=_verdict(check.judge_passed),  # type: ignore[arg-type]
                note=check.note,
            )
            for check in label.checks
        ],
        created_at=label.created_at,
        updated_at=label.updated_at,
    )


def item_out(item: ReviewItem) -> ReviewItemOut:
    """The API shape of an item as the queue lists it."""
    return ReviewItemOut(
        id=item.id,
        kind="trace" if item.trace_id is not None else "case_result",
        status=item.status,
        assignee=item.assignee_email,
        run_id=item.run_id,
        test_case_id=item.test_case_id,
        trial=item.trial,
        trace_id=item.trace_id,
        label_count=item.label_count,
        created_at=item.created_at,
        done_at=item.done_at,
    )


def _one_source(data: ReviewEnqueue) -> None:
    if (data.run_id is None) == (data.trace_ids is None):
        detail = "Name a run (run_id) or traces (trace_ids) to queue, not both."
        raise InvalidInput(detail, [FieldError(pointer="/run_id", detail=detail)])
    if data.trace_ids is not None and (data.outcome or data.check_type or data.limit):
        detail = "outcome, check_type and limit choose a run's results; traces are queued by id."
        raise InvalidInput(detail, [FieldError(pointer="/trace_ids", detail=detail)])


class ReviewItemController(Controller):
    """The review queue: what people label, and their labels."""

    path = "/review-items"
    tags = ("review",)

    @post(operation_id="enqueueReviewItems")
    async def enqueue(
        self, platform: PlatformDep, project_id: ProjectId, data: JSONBody[ReviewEnqueue]
    ) -> Enqueued:
        """Queue a run's case results (all, of one outcome, with a check of one type, a random
        sample) or traces, for one member or anyone."""
        _one_source(data)
        assignee = await service.assignee_id(platform, project_id, data.assignee)
        if data.run_id is not None:
            which = (data.outcome, data.check_type, data.limit)
            added = await service.enqueue_results(
                platform, project_id, data.run_id, which, assignee
            )
        else:
            assert data.trace_ids is not None, "one source was checked"
            added = await service.enqueue_traces(platform, project_id, data.trace_ids, assignee)
        return Enqueued(enqueued=added)

    @get(operation_id="listReviewItems")
    async def list(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        status: FromQuery[ReviewStatus | None] = None,
        assignee: AssigneeFilter = None,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> ReviewItemPage:
        """The queue in the order it was filled, pending or done, of one member or nobody's,
        with how far each reviewer has got."""
        unassigned = assignee is not None and assignee.lower() == "none"
        user_id = None
        if assignee is not None and not unassigned:
            user_id = await service.member_id(platform, project_id, assignee)
        after = decode_cursor(cursor) or None
        items = []
        if assignee is None or unassigned or user_id is not None:
            items = await service.list_items(
                platform, project_id, status, (user_id, unassigned), after, limit + 1
            )
        pending, done, reviewers = await service.progress(platform, project_id)
        return ReviewItemPage(
            items=[item_out(item) for item in items[:limit]],
            next_cursor=next_cursor([item.seq for item in items], limit),
            pending=pending,
            done=done,
            reviewers=[ReviewerProgress(reviewer=name, labelled=n) for name, n in reviewers],
        )

    @get("/{item_id:str}", operation_id="getReviewItem")
    async def get(
        self, platform: PlatformDep, project_id: ProjectId, item_id: FromPath[str]
    ) -> ReviewItemOut:
        """One item: the case result as its card shows it (or the trace's id), and everyone's
        labels of it side by side."""
        item = await service.get_item(platform, project_id, parse_id(item_id, "review item"))
        return await _item_in_full(platform, item)

    @post("/{item_id:str}/labels", operation_id="labelReviewItem")
    async def label(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        item_id: FromPath[str],
        data: JSONBody[LabelPost],
    ) -> ReviewItemOut:
        """Record the caller's labels of the item (replacing their own earlier ones); answers
        the item with everyone's labels."""
        posted = service.PostedLabel(
            verdict=data.verdict,
            checks=tuple(data.checks),
            note=data.note,
            corrected_output=data.corrected_output,
        )
        found = parse_id(item_id, "review item")
        await service.record_label(platform, project_id, caller, found, posted)
        item = await service.get_item(platform, project_id, found)
        return await _item_in_full(platform, item)

    @post("/{item_id:str}/test-case", operation_id="createTestCaseFromReviewedTrace")
    async def test_case(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        item_id: FromPath[str],
        data: JSONBody[CaseFromReviewedTrace],
    ) -> TestCase:
        """A test case of a reviewed trace, expecting the reply its reviewer corrected or
        passed."""
        case = await reviewed_traces.case_from_reviewed_trace(
            platform,
            project_id,
            parse_id(item_id, "review item"),
            body_id(data.dataset_id, "/dataset_id", "dataset"),
        )
        return case_out(case)


async def _item_in_full(platform: PlatformDep, item: ReviewItem) -> ReviewItemOut:
    shown = item_out(item)
    labels = await service.labels_of(platform, item)
    shown.labels = [label_out(label) for label in labels]
    if item.trace_id is None:
        result, _ = await service.result_of(platform, item)
        shown.result = stored_result_out(result, None)
    return shown
