"""The review queue on the wire: filling it, an item with its result and labels, a label."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from agentlasso.domain.checks import MAX_EXAMPLE_NOTE_CHARS, CheckType
from agentlasso.domain.review import (
    MAX_CORRECTED_OUTPUT_CHARS,
    MAX_SAMPLE,
    MAX_TRACES_PER_CALL,
    CheckLabel,
    JudgedKind,
    Note,
    ReviewStatus,
    Verdict,
)
from agentlasso.schemas.run_results import StoredResult

TraceId = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Email = Annotated[str, msgspec.Meta(min_length=3, max_length=320)]


class ReviewEnqueue(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to queue: a run's case results (all of them, of one outcome, with a check of one
    type, a random sample of `limit`) or traces by id; and who should label them (an
    organisation member's email; nobody in particular when left out)."""

    run_id: UUID | None = None
    outcome: Literal["passed", "failed", "not_graded"] | None = None
    check_type: CheckType | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_SAMPLE)] | None = None
    trace_ids: (
        Annotated[list[TraceId], msgspec.Meta(min_length=1, max_length=MAX_TRACES_PER_CALL)] | None
    ) = None
    assignee: Email | None = None


class Enqueued(msgspec.Struct, kw_only=True):
    """How many items the call added (results or traces already queued are not added again)."""

    enqueued: int


class LabelPost(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One person's labels of an item: an overall verdict, a verdict on each judged check (an
    `llm_judge` check or `expectation`), a note, a corrected reply. Posting again replaces the
    same person's earlier labels; another person's are kept beside them."""

    verdict: Verdict | None = None
    checks: Annotated[list[CheckLabel], msgspec.Meta(max_length=100)] = []
    note: Note | None = None
    corrected_output: Annotated[str, msgspec.Meta(max_length=MAX_CORRECTED_OUTPUT_CHARS)] | None = (
        None
    )


class CheckLabelOut(msgspec.Struct, kw_only=True):
    """A person's verdict on one judged check, beside the judge's (None: not graded)."""

    check_id: str
    kind: JudgedKind
    criterion: str | None
    verdict: Verdict
    judge_verdict: Verdict | None
    note: str | None


class LabelOut(msgspec.Struct, kw_only=True):
    """One person's labels of an item."""

    reviewer: str
    verdict: Verdict | None
    note: str | None
    corrected_output: str | None
    checks: list[CheckLabelOut]
    created_at: datetime
    updated_at: datetime


class ReviewItemOut(msgspec.Struct, kw_only=True):
    """An item of the queue: a run's case result (with what its case card shows) or a trace."""

    id: UUID
    kind: Literal["case_result", "trace"]
    status: ReviewStatus
    assignee: str | None
    run_id: UUID | None
    test_case_id: UUID | None
    trial: int | None
    trace_id: str | None
    label_count: int
    created_at: datetime
    done_at: datetime | None
    # Only when one item is read: the result as its case card shows it, and the labels.
    result: StoredResult | msgspec.UnsetType = msgspec.UNSET
    labels: list[LabelOut] | msgspec.UnsetType = msgspec.UNSET


class ReviewerProgress(msgspec.Struct, kw_only=True):
    """How many items one person has labelled."""

    reviewer: str
    labelled: int


class ReviewItemPage(msgspec.Struct, kw_only=True):
    """A page of the queue, in the order it was filled, and the queue's progress."""

    items: list[ReviewItemOut]
    next_cursor: str | None
    pending: int
    done: int
    reviewers: list[ReviewerProgress]


class ExamplePost(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A labelled result made an example of its AI-judge criterion: `result_ref` is the review
    item of the result (a disagreement names it), with the verdict people gave and why."""

    result_ref: UUID
    verdict: Verdict
    note: Annotated[str, msgspec.Meta(max_length=MAX_EXAMPLE_NOTE_CHARS)] | None = None


class CaseFromReviewedTrace(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The dataset a reviewed trace's test case goes into."""

    dataset_id: str
