"""Review (contract section 15): the queue, each item as its case card with Agree / Disagree
beside each judge verdict, and Save and next; a run's results sent to the queue."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath

from agentlasso.domain.review import (
    MAX_SAMPLE,
    JudgedCheck,
    ReviewItem,
    ReviewLabel,
    ReviewStatus,
    reviewer_of,
)
from agentlasso.errors import FieldError, InvalidInput, NotFound
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.services import case_cards as card_service
from agentlasso.services import review as service
from agentlasso.services import traces as trace_service
from agentlasso.services.platform import Platform
from agentlasso.web import trace_views
from agentlasso.web.case_cards import card_shown
from agentlasso.web.forms import by_field, number_field, text
from agentlasso.web.rendering import page, redirect
from agentlasso.web.review_forms import check_field, form_values, posted_label, posted_values
from agentlasso.web.sessions import caller_of, session_of

QUEUE_PAGE_SIZE = 100
STATUS_CHOICES = [("", "Pending first, then done"), ("pending", "Pending"), ("done", "Done")]
ASSIGNEE_CHOICES = [("", "Anyone's"), ("mine", "Assigned to me"), ("unassigned", "Unassigned")]
STATUSES: tuple[ReviewStatus, ...] = ("pending", "done")
QUEUE_OUTCOMES = {"failed": "failed", "passed": "passed", "not_graded": "not_graded", "all": None}


class ReviewPages(Controller):
    """/review: the queue and its items."""

    @get("/review", name="review_queue")
    async def queue(self, request: Request[Any, Any, Any], platform: PlatformDep) -> Response[Any]:
        """The queue: pending and done counts, each reviewer's progress, the items (pending
        first), filtered by status and assignee."""
        query = request.query_params
        status = _choice(query.get("status"), STATUS_CHOICES)
        assignee = _choice(query.get("assignee"), ASSIGNEE_CHOICES)
        project_id = session_of(request).project_id
        items = await _queue_items(platform, request, status, assignee)
        pending, done, reviewers = await service.progress(platform, project_id)
        return page(
            request, "review_queue.html", items=items, pending=pending, done=done,
            reviewers=reviewers, filters={"status": status, "assignee": assignee},
            choices={"status": STATUS_CHOICES, "assignee": ASSIGNEE_CHOICES},
            keyless=assignee == "mine" and session_of(request).user_id is None,
            finished=query.get("finished") == "1",
        )  # fmt: skip

    @post("/review/queue", name="queue_for_review")
    async def send(self, request: Request[Any, Any, Any], platform: PlatformDep) -> Response[Any]:
        """Queue a run's results (failed, passed, not graded or all; a random sample of
        `limit`); back to the run saying how many joined the queue."""
        form = await request.form()
        run_id = parse_id(text(form, "run_id"), "run")
        outcome = text(form, "outcome") or "failed"
        errors: dict[str, str] = {}
        limit = number_field(form, "limit", int, errors)
        if outcome not in QUEUE_OUTCOMES:
            errors["outcome"] = "Choose failed, passed, not graded or all results."
        if limit is not None and not 1 <= limit <= MAX_SAMPLE:
            errors["limit"] = f"A sample of 1 to {MAX_SAMPLE:,} results."
        if errors:
            name, detail = next(iter(errors.items()))
            raise InvalidInput(detail, [FieldError(pointer=f"/{name}", detail=detail)])
        which = (QUEUE_OUTCOMES[outcome], None, limit)
        project_id = session_of(request).project_id
        added = await service.enqueue_results(platform, project_id, run_id, which, None)
        return redirect(request, f"/runs/{run_id}?queued={added}")

    @get("/review/{item_id:str}", name="review_item")
    async def item(
        self, request: Request[Any, Any, Any], platform: PlatformDep, item_id: FromPath[str]
    ) -> Response[Any]:
        """One item as its case card, with the label form and everyone's labels of it."""
        item = await _item_of(request, platform, item_id)
        saved = request.query_params.get("saved") == "1"
        return await item_page(request, platform, item, saved=saved)

    @post("/review/{item_id:str}/labels", name="label_review_item")
    async def label(
        self, request: Request[Any, Any, Any], platform: PlatformDep, item_id: FromPath[str]
    ) -> Response[Any]:
        """Save the person's labels of the item, then on to the next item they have still to
        label (or back to the queue when there is none)."""
        item = await _item_of(request, platform, item_id)
        judged = await _judged_of(platform, item)
        form = await request.form()
        errors: dict[str, str] = {}
        posted = posted_label(form, judged, errors)
        if not errors:
            try:
                await service.record_label(
                    platform, item.project_id, caller_of(request), item.id, posted
                )
            except InvalidInput as exc:
                errors = by_field(exc.errors)
        if errors:
            values = posted_values(form, judged)
            return await item_page(request, platform, item, values=values, errors=errors)
        following = await service.next_to_label(platform, caller_of(request), item)
        if following is None:
            return redirect(request, "/review?finished=1")
        return redirect(request, f"/review/{following}?saved=1")


def _choice(value: str | None, choices: list[tuple[str, str]]) -> str:
    return value if value in {key for key, _ in choices} else ""


async def _queue_items(
    platform: Platform, request: Request[Any, Any, Any], status: str, assignee: str
) -> list[ReviewItem]:
    session = session_of(request)
    if assignee == "mine" and session.user_id is None:
        return []
    who = (session.user_id if assignee == "mine" else None, assignee == "unassigned")
    items: list[ReviewItem] = []
    for each in (chosen for chosen in STATUSES if status in ("", chosen)):
        items += await service.list_items(
            platform, session.project_id, each, who, None, QUEUE_PAGE_SIZE
        )
    return items


async def _item_of(request: Request[Any, Any, Any], platform: Platform, item_id: str) -> ReviewItem:
    found = parse_id(item_id, "review item")
    return await service.get_item(platform, session_of(request).project_id, found)


async def _shown_of(platform: Platform, item: ReviewItem) -> dict[str, Any]:
    """What the item shows: a result as its case card (with its judged checks), or a trace's
    input and reply."""
    if item.trace_id is not None:
        try:
            trace = await trace_service.get_trace_summary(platform, item.project_id, item.trace_id)
        except NotFound:
            return {"trace": None, "judged": [], "heading": f"trace {item.trace_id[:12]}"}
        return {
            "trace": trace,
            "shown_input": trace_views.shown_value(trace.input),
            "judged": [],
            "heading": f"trace {trace.name or item.trace_id[:12]}",
        }
    assert item.run_id is not None, "a result item names its run"
    assert item.test_case_id is not None, "a result item names its case"
    assert item.trial is not None, "a result item names its trial"
    card = await card_service.case_card(
        platform, item.project_id, item.run_id, item.test_case_id, item.trial
    )
    judged = list(service.judged_of(card.result, card.graded).values())
    content = card.graded.content
    heading = content.description or _one_line(content.input) or "Test case"
    return {**card_shown(card), "trace": None, "judged": judged, "heading": heading}


def _one_line(value: object, most: int = 80) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    shown = " ".join(shown.split())
    return shown if len(shown) <= most else shown[: most - 1] + "…"


async def _judged_of(platform: Platform, item: ReviewItem) -> list[JudgedCheck]:
    """The item's judged checks, in the order the form lists them (a trace has none)."""
    if item.trace_id is not None:
        return []
    result, graded = await service.result_of(platform, item)
    return list(service.judged_of(result, graded).values())


def _judged_rows(judged: list[JudgedCheck]) -> list[dict[str, Any]]:
    return [
        {"field": check_field(index), "check": check, "name": _check_name(check)}
        for index, check in enumerate(judged)
    ]


def _check_name(check: JudgedCheck) -> str:
    if check.kind == "expectation":
        return "The expectation"
    return f"AI judge: {check.criterion}" if check.criterion else f"AI judge {check.check_id}"


def _side_by_side(labels: list[ReviewLabel], judged: list[JudgedCheck]) -> list[dict[str, Any]]:
    """Each person's labels as a row: the overall verdict, then one verdict per judged check."""
    rows = []
    for label in labels:
        given = {check.check_id: check.human_passed for check in label.checks}
        rows.append({"label": label, "checks": [given.get(check.check_id) for check in judged]})
    return rows


async def item_page(
    request: Request[Any, Any, Any],
    platform: Platform,
    item: ReviewItem,
    values: Mapping[str, str] | None = None,
    errors: dict[str, str] | None = None,
    saved: bool = False,
) -> Response[Any]:
    """The item page: the form filled in with what was posted, else the person's own label."""
    shown = await _shown_of(platform, item)
    judged: list[JudgedCheck] = shown["judged"]
    labels = await service.labels_of(platform, item)
    mine = reviewer_of(session_of(request).actor).key
    own = next((label for label in labels if label.reviewer == mine), None)
    return page(
        request, "review_item.html", status_code=422 if errors else 200, **shown, item=item,
        rows=_judged_rows(judged), labels=_side_by_side(labels, judged),
        values=values if values is not None else form_values(own, judged),
        errors=errors or {}, saved=saved, own=own is not None,
    )  # fmt: skip
