"""Dataset Studio: datasets with their last run, a dataset's cases (search, filters, pages),
its settings, import and export."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath, FromQuery
from litestar.response import Stream

from agentlasso.domain.checks import CHECK_TYPES, PRODUCT_NAMES, Severity, type_of
from agentlasso.domain.conversations import Conversation
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.test_cases import MAX_TAG_CHARS, TestCase
from agentlasso.domain.web import CaseFilter
from agentlasso.errors import Conflict, InvalidInput
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import decode_cursor, next_cursor
from agentlasso.schemas.datasets import DatasetCreate
from agentlasso.services import dataset_versions as version_service
from agentlasso.services import datasets as dataset_service
from agentlasso.services import test_cases as case_service
from agentlasso.services import transfer
from agentlasso.web.forms import (
    by_field,
    checked,
    json_field,
    optional_text,
    parsed_json,
    text,
)
from agentlasso.web.objects import dataset_named
from agentlasso.web.once import new_form_id, once
from agentlasso.web.page_charts import dataset_charts
from agentlasso.web.rendering import download_disposition, page, redirect
from agentlasso.web.sessions import caller_of, session_of

PAGE_SIZE = 50
# The newest versions the dataset page lists (the Start a run form offers more).
VERSIONS_SHOWN = 20
# What the dataset page's filters offer, by the names people know.
CHECK_TYPE_CHOICES = [("", "Any check type"), *PRODUCT_NAMES.items()]
SEVERITY_CHOICES = [("", "Any severity"), ("critical", "Critical"), ("minor", "Minor")]
JUDGE_CHOICES = [("", "With or without"), ("yes", "Uses the AI judge"), ("no", "No AI judge")]
LAST_RUN_CHOICES = [("", "Any result"), ("failed", "Failed in the last run")]
FILTER_CHOICES = {
    "check_type": CHECK_TYPE_CHOICES,
    "severity": SEVERITY_CHOICES,
    "judged": JUDGE_CHOICES,
    "last_run": LAST_RUN_CHOICES,
}


class StudioPages(Controller):
    """Datasets and their cases."""

    @get("/", name="home")
    async def home(self, request: Request[Any, Any, Any]) -> Response[Any]:
        """Signed in: straight to the datasets."""
        return redirect(request, "/datasets")

    @get("/datasets", name="datasets")
    async def datasets(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        cursor: FromQuery[str | None] = None,
    ) -> Response[Any]:
        """Every dataset with its case count and its last run's pass rate and gate."""
        project_id = session_of(request).project_id
        summaries = await dataset_service.dataset_summaries(
            platform, project_id, decode_cursor(cursor), PAGE_SIZE + 1
        )
        more = next_cursor([summary.dataset.seq for summary in summaries], PAGE_SIZE)
        return page(request, "datasets.html", summaries=summaries[:PAGE_SIZE], next_cursor=more)

    @get("/datasets/new", name="new_dataset")
    async def new_dataset(self, request: Request[Any, Any, Any]) -> Response[Any]:
        """The form for a new dataset."""
        return _dataset_form(request, {}, {})

    @post("/datasets", name="create_dataset")
    async def create_dataset(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Create a dataset; back to the form with the problems when it cannot be."""
        form = await request.form()
        errors: dict[str, str] = {}
        fields = _dataset_fields(form, errors)
        written = checked(fields, DatasetCreate, errors) if not errors else None
        if written is None:
            return _dataset_form(request, form, errors, status_code=422)
        project_id = session_of(request).project_id

        async def create() -> str:
            dataset = await dataset_service.create_dataset(
                platform, project_id, written.name, written.description, written.data_context
            )
            return f"/datasets/{dataset.id}"

        try:
            location = await once(platform, project_id, form.get("form_id"), "/datasets", create)
        except InvalidInput as exc:
            return _dataset_form(request, form, by_field(exc.errors), status_code=422)
        return redirect(request, location)

    @get("/datasets/{dataset_id:str}", name="dataset")
    async def dataset(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        dataset_id: FromPath[str],
        cursor: FromQuery[str | None] = None,
    ) -> Response[Any]:
        """A dataset's cases, searched and filtered, a page at a time; and its settings."""
        dataset = await dataset_named(request, platform, dataset_id)
        return await dataset_page(request, platform, dataset, cursor, {}, {})

    @post("/datasets/{dataset_id:str}", name="update_dataset")
    async def update_dataset(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Rename, describe, or change the data context."""
        project_id = session_of(request).project_id
        dataset = await dataset_named(request, platform, dataset_id)
        form = await request.form()
        errors: dict[str, str] = {}
        fields = _dataset_fields(form, errors)
        written = checked(fields, DatasetCreate, errors) if not errors else None
        if written is not None:
            try:
                await dataset_service.update_dataset(platform, project_id, dataset.id, fields)
            except InvalidInput as exc:
                errors = by_field(exc.errors)
        if errors:
            return await dataset_page(request, platform, dataset, None, form, errors, 422)
        return redirect(request, f"/datasets/{dataset.id}?saved=1")

    @get("/datasets/{dataset_id:str}/delete", name="confirm_delete_dataset")
    async def confirm_delete(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Ask before deleting."""
        dataset = await dataset_named(request, platform, dataset_id)
        return page(request, "dataset_delete.html", dataset=dataset, problem=None)

    @post("/datasets/{dataset_id:str}/delete", name="delete_dataset")
    async def delete(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Delete the dataset and its cases (its finished runs stay readable)."""
        project_id = session_of(request).project_id
        dataset = await dataset_named(request, platform, dataset_id)
        try:
            await dataset_service.delete_dataset(
                platform, project_id, dataset.id, caller_of(request)
            )
        except Conflict as exc:
            return page(
                request, "dataset_delete.html", status_code=409, dataset=dataset, problem=exc.detail
            )
        return redirect(request, "/datasets")

    @get("/datasets/{dataset_id:str}/export", name="export_cases")
    async def export_cases(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        dataset_id: FromPath[str],
        format: FromQuery[str] = "jsonl",
    ) -> Stream:
        """The cases as JSON Lines (or CSV, `?format=csv`), a file that imports back unchanged."""
        project_id = session_of(request).project_id
        dataset = await dataset_named(request, platform, dataset_id)
        as_csv = format == "csv"
        chunks = await transfer.export_test_cases(
            platform, project_id, dataset.id, "csv" if as_csv else "jsonl"
        )
        return Stream(
            chunks,
            media_type="text/csv; charset=utf-8" if as_csv else "application/x-ndjson",
            headers={
                "content-disposition": download_disposition(
                    dataset.name, ".csv" if as_csv else ".jsonl"
                ),
                "cache-control": "no-store",  # a project's cases: kept by no cache
            },
        )

    @post("/ui/check-json", name="check_json")
    async def check_json(self, request: Request[Any, Any, Any]) -> Response[Any]:
        """As the data context is typed: whether it is a JSON object (htmx swaps the answer
        in beside the field)."""
        form = await request.form()
        name = "tools" if text(form, "field") == "tools" else "data_context"
        _, problem = parsed_json(text(form, name), list if name == "tools" else dict)
        return page(request, "_field_check.html", problem=problem)


def _dataset_fields(form: Mapping[str, Any], errors: dict[str, str]) -> dict[str, Any]:
    return {
        "name": text(form, "name").strip(),
        "description": optional_text(form, "description"),
        "data_context": json_field(form, "data_context", errors),
    }


def _dataset_form(
    request: Request[Any, Any, Any],
    form: Mapping[str, Any],
    errors: dict[str, str],
    status_code: int = 200,
) -> Response[Any]:
    return page(
        request,
        "dataset_new.html",
        status_code=status_code,
        values={name: text(form, name) for name in ("name", "description", "data_context")},
        errors=errors,
        form_id=text(form, "form_id") or new_form_id(),
    )


async def dataset_page(
    request: Request[Any, Any, Any],
    platform: PlatformDep,
    dataset: Dataset,
    cursor: str | None,
    form: Mapping[str, Any],
    errors: dict[str, str],
    status_code: int = 200,
    version_name: str = "",
) -> Response[Any]:
    """The dataset page; `form` and `errors` are the settings form's as posted, or the freeze
    form's errors with the `version_name` typed."""
    query = request.query_params
    last_run = await dataset_service.last_run(platform, dataset)
    where, chosen = _filter(query, last_run.id if last_run else None)
    cases = await case_service.find_test_cases(
        platform, dataset.id, where, decode_cursor(cursor), PAGE_SIZE + 1
    )
    more = next_cursor([case.seq for case in cases], PAGE_SIZE)
    cases = cases[:PAGE_SIZE]
    outcomes = (
        await case_service.outcomes_in_run(platform, last_run.id, [case.id for case in cases])
        if last_run
        else {}
    )
    values = (
        {name: text(form, name) for name in ("name", "description", "data_context")}
        if form
        else _dataset_values(dataset)
    )
    return page(
        request,
        "dataset.html",
        status_code=status_code,
        dataset=dataset,
        last_run=last_run,
        **await _versions(request, platform, dataset, version_name),
        **await dataset_charts(request, platform, dataset),
        cases=[_row(case, outcomes.get(case.id)) for case in cases],
        next_cursor=more,
        filters=chosen,
        filtering=any(chosen.values()),
        choices=FILTER_CHOICES,
        values=values,
        errors=errors,
        # Shown as "Imported N test cases": a number, or nothing (never text from a link).
        imported=imported if (imported := query.get("imported", "")).isdigit() else None,
        saved=query.get("saved"),
        frozen=query.get("frozen"),
    )


async def _versions(
    request: Request[Any, Any, Any], platform: PlatformDep, dataset: Dataset, version_name: str
) -> dict[str, Any]:
    """The newest versions the page lists, and the id and the name typed its freeze form
    carries."""
    versions = await version_service.list_versions(
        platform, session_of(request).project_id, dataset.id, None, VERSIONS_SHOWN + 1
    )
    return {
        "versions": versions[:VERSIONS_SHOWN],
        "more_versions": len(versions) > VERSIONS_SHOWN,
        "form_id": new_form_id(),
        "version_name": version_name,
    }


def _filter(
    query: Mapping[str, Any], last_run_id: UUID | None
) -> tuple[CaseFilter, dict[str, str]]:
    """The filter the page's query asks for, and the choices to show as made."""
    names = ("q", "tag", "check_type", "severity", "judged", "last_run")
    chosen = {name: str(query.get(name) or "") for name in names}
    check_type = chosen["check_type"] if chosen["check_type"] in CHECK_TYPES else None
    severities: dict[str, Severity] = {"critical": "critical", "minor": "minor"}
    severity = severities.get(chosen["severity"])
    judged = {"yes": True, "no": False}.get(chosen["judged"])
    failed_in = last_run_id if chosen["last_run"] == "failed" else None
    where = CaseFilter(
        text=chosen["q"].strip()[:200] or None,
        check_type=check_type,
        severity=severity,
        judged=judged,
        failed_in_run=failed_in,
        tag=chosen["tag"].strip()[:MAX_TAG_CHARS] or None,
    )
    return where, chosen


def _dataset_values(dataset: Dataset) -> dict[str, str]:
    return {
        "name": dataset.name,
        "description": dataset.description or "",
        "data_context": ""
        if dataset.data_context is None
        else json.dumps(dataset.data_context, indent=2, ensure_ascii=False),
    }


def conversation_line(conversation: Conversation) -> str:
    """A conversation case as one line of the cases table: its turns and first message."""
    turns = len(conversation.turns)
    first = conversation.turns[0].user if conversation.turns else None
    opening = first if isinstance(first, str) or first is None else json.dumps(first)
    if opening is None and conversation.simulated_user is not None:
        opening = conversation.simulated_user.opening or "played by its simulated user"
    return f"Conversation, {turns} turn{'' if turns == 1 else 's'}: {opening}"


def _row(case: TestCase, outcome: str | None) -> dict[str, Any]:
    """What the cases table shows of a case."""
    content = case.content
    shown = content.input if isinstance(content.input, str) else json.dumps(content.input)
    checks = content.checks or ()
    if content.conversation is not None:
        shown = conversation_line(content.conversation)
        checks = (*(check for _, check in content.conversation.turn_checks()), *checks)
    kinds = sorted({PRODUCT_NAMES[type_of(type(check))] for check in checks}) if checks else []
    return {
        "id": case.id,
        "input": shown if len(shown) <= 160 else shown[:157] + "...",
        "description": content.description or "",
        "checks": len(checks),
        "kinds": kinds,
        "older": content.checks is None and content.evaluation_criteria_json is not None,
        "judged": any(type_of(type(check)) == "llm_judge" for check in checks)
        or content.expected_output is not None,
        "outcome": outcome,
        "tags": content.tags,
    }
