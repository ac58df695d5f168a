"""The rubric editor: a case's input, expectation and checks as forms; Preview against the
project's agent (or a pasted reply), graded as a run grades; Save makes a revision."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath, FromQuery

from agentlasso.domain.checks import PRODUCT_NAMES
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.test_cases import TestCase, TestCaseContent
from agentlasso.errors import Conflict, InvalidInput, StaleRevision, TooManyRequests
from agentlasso.grading.patterns import regex_compile_error
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.services import preview as preview_service
from agentlasso.services import runs as run_service
from agentlasso.services import test_cases as case_service
from agentlasso.services.conversation_preview import PlayedPreview
from agentlasso.services.platform import Platform
from agentlasso.web import case_form, conversation_paste
from agentlasso.web.agent_reply import pasted_fields, what_the_agent_did
from agentlasso.web.case_form import CaseForm
from agentlasso.web.conversation_views import chat, turn_of
from agentlasso.web.forms import json_problem, text
from agentlasso.web.objects import case_and_dataset_named, case_named, dataset_named
from agentlasso.web.once import new_form_id, once
from agentlasso.web.page_limits import with_retry_after
from agentlasso.web.rendering import page, redirect
from agentlasso.web.revision_diff import revision_diff
from agentlasso.web.server_timing import spent
from agentlasso.web.sessions import caller_of, session_of

HISTORY_SHOWN = 50
# Where the editor posts, when a page other than a case's own opens it (request.state).
EDITOR_URL = "editor_url"
# The element Preview and Paste a reply fill (case_editor.html).
PREVIEW_SLOT = "preview-slot"


class CaseEditorPages(Controller):
    """Writing and trying a test case."""

    @get("/datasets/{dataset_id:str}/cases/new", name="new_case")
    async def new_case(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """An empty editor for a new case of the dataset."""
        dataset = await dataset_named(request, platform, dataset_id)
        return editor(request, dataset, None, CaseForm())

    @post("/datasets/{dataset_id:str}/cases/new", name="edit_new_case")
    async def edit_new_case(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """An action on a new case: add or remove a check, preview, save."""
        dataset = await dataset_named(request, platform, dataset_id)
        return await act(request, platform, dataset, None)

    @get("/cases/{case_id:str}", name="case")
    async def case(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        case_id: FromPath[str],
        reply_from: FromQuery[str | None] = None,
        trial: FromQuery[int] = 1,
    ) -> Response[Any]:
        """The editor on a case's current revision; with `reply_from` (a run), the reply the
        agent gave in that run loaded in Paste a reply, to fix a check against it."""
        case, dataset = await case_and_dataset_named(request, platform, case_id)
        form = case_form.from_content(case.content)
        warnings = {
            case_form.field_of(warning.pointer): warning.detail
            for warning in case_service.regex_warnings(case.content)
        }
        pasted = {}
        if reply_from:
            _, result, _ = await run_service.result_of_case(
                platform, session_of(request).project_id, parse_id(reply_from, "run"), case.id,
                trial,
            )  # fmt: skip
            pasted = pasted_fields(result)
        saved = request.query_params.get("saved") is not None
        added = request.query_params.get("added") is not None  # just made from a trace
        return editor(
            request, dataset, case, form, pasted, warnings=warnings, saved=saved, added=added
        )

    @post("/cases/{case_id:str}", name="edit_case")
    async def edit_case(
        self, request: Request[Any, Any, Any], platform: PlatformDep, case_id: FromPath[str]
    ) -> Response[Any]:
        """An action on a case: add or remove a check, preview, save."""
        case, dataset = await case_and_dataset_named(request, platform, case_id)
        return await act(request, platform, dataset, case)

    @get("/cases/{case_id:str}/history", name="case_history")
    async def history(
        self, request: Request[Any, Any, Any], platform: PlatformDep, case_id: FromPath[str]
    ) -> Response[Any]:
        """Every revision of the case, each with what changed from the one before."""
        project_id = session_of(request).project_id
        test_case_id = parse_id(case_id, "test case")
        revisions = await case_service.case_revisions(
            platform, project_id, test_case_id, HISTORY_SHOWN + 1
        )
        case, dataset = await case_service.get_test_case_with_dataset(
            platform, project_id, test_case_id
        )
        changes = [
            {"revision": revision, "diff": revision_diff(older, revision)}
            for revision, older in zip(revisions, [*revisions[1:], None], strict=True)
        ][:HISTORY_SHOWN]
        return page(request, "case_history.html", case=case, dataset=dataset, changes=changes)

    @post("/cases/{case_id:str}/delete", name="delete_case")
    async def delete(
        self, request: Request[Any, Any, Any], platform: PlatformDep, case_id: FromPath[str]
    ) -> Response[Any]:
        """Delete the case (runs that used it keep their results)."""
        case = await case_named(request, platform, case_id)
        project_id = session_of(request).project_id
        await case_service.delete_test_case(platform, project_id, case.id, caller_of(request))
        return redirect(request, f"/datasets/{case.dataset_id}")

    @post("/ui/check-regex", name="check_regex")
    async def check_regex(self, request: Request[Any, Any, Any]) -> Response[Any]:
        """As a text check's pattern is typed: RE2's own error, or nothing (htmx swaps it in)."""
        form = await request.form()
        check = text(form, "field")  # which check: "checks-N"
        problem = None
        if form.get(f"{check}-regex") in ("on", "true", "1"):
            problem = regex_compile_error(text(form, f"{check}-value"))
        return page(request, "_field_check.html", problem=problem)


async def act(
    request: Request[Any, Any, Any],
    platform: Platform,
    dataset: Dataset,
    case: TestCase | None,
    store: Callable[[TestCaseContent], Awaitable[str]] | None = None,
) -> Response[Any]:
    """Do what the pressed button asks with the form as posted; `store` saves a new case
    elsewhere than the default (a generated draft, accepted), answering where to go next."""
    posted = await request.form()
    form = case_form.from_form_data(posted)
    action = text(posted, "action") or "save"
    if action.startswith("add:"):
        added = case_form.with_check_added(form, action[4:])
        new_check = f"checks-{len(added.checks) - 1}"
        return editor(request, dataset, case, added, posted, focus=new_check)
    if action.startswith("remove:") and action[7:].isdigit():
        removed = case_form.with_check_removed(form, int(action[7:]))
        return editor(request, dataset, case, removed, posted, focus="checks")
    if action == "convert":
        converted = case_form.with_older_criteria_converted(form)
        return editor(request, dataset, case, converted, posted, focus="checks")
    if (edited := case_form.with_action(form, action)) is not None:
        return editor(request, dataset, case, edited[0], posted, focus=edited[1])
    content, errors = case_form.to_content(form)
    if content is None:
        return editor(request, dataset, case, form, posted, errors=errors, status_code=422)
    if action in ("preview", "paste"):
        return await _preview(request, platform, dataset, case, form, posted, content, action)
    return await _save(request, platform, dataset, case, form, posted, content, store)


async def _preview(
    request: Request[Any, Any, Any],
    platform: Platform,
    dataset: Dataset,
    case: TestCase | None,
    form: CaseForm,
    posted: Mapping[str, Any],
    content: TestCaseContent,
    action: str,
) -> Response[Any]:
    project_id = session_of(request).project_id
    try:
        if content.conversation is not None:
            outcome: preview_service.JudgedPreview = await conversation_paste.graded(
                platform, project_id, dataset, content, posted, action, case.id if case else None
            )
        elif action == "paste":
            reply, calls, errors = _pasted(posted)
            if errors:
                refused = editor(
                    request, dataset, case, form, posted, errors=errors, status_code=422
                )
                return whole_editor_instead(request, refused)
            outcome = await preview_service.preview_pasted(
                platform, project_id, content, dataset.data_context, reply, calls
            )
        else:
            outcome = await preview_service.preview_with_agent(
                platform, project_id, content, dataset.data_context, case.id if case else None
            )
    except (InvalidInput, Conflict, TooManyRequests) as exc:
        errors, status = _refusal(exc)
        refused = editor(request, dataset, case, form, posted, errors=errors, status_code=status)
        if isinstance(exc, TooManyRequests):
            with_retry_after(refused, exc)
        return whole_editor_instead(request, refused)
    spent(request, "agent", outcome.agent_s)
    spent(request, "judge", outcome.judge_s)
    if asked_for_preview_only(request):
        return page(request, "_preview_slot.html", preview=preview_view(outcome))
    return editor(request, dataset, case, form, posted, preview=outcome)


def asked_for_preview_only(request: Request[Any, Any, Any]) -> bool:
    """htmx asked for the preview slot alone: the form on the page stays as the person left it."""
    return request.headers.get("hx-target") == PREVIEW_SLOT


def whole_editor_instead(request: Request[Any, Any, Any], response: Response[Any]) -> Response[Any]:
    """An editor with errors, put in place of the whole editor even when htmx asked for the
    preview slot (the errors are shown by their fields)."""
    if asked_for_preview_only(request):
        response.headers.update(
            {"hx-retarget": "#editor", "hx-reselect": "#editor", "hx-reswap": "outerHTML"}
        )
    return response


def _refusal(exc: InvalidInput | Conflict | TooManyRequests) -> tuple[dict[str, str], int]:
    """A service's refusal as the editor shows it: errors by field (or for the whole form),
    and the status."""
    if isinstance(exc, InvalidInput):
        return case_form.errors_by_field(exc.errors), 422
    return {"": exc.detail}, 429 if isinstance(exc, TooManyRequests) else 409


def _pasted(posted: Mapping[str, Any]) -> tuple[str, Any, dict[str, str]]:
    """The pasted reply and tool calls (a JSON list; blank is no calls reported)."""
    raw_calls = text(posted, "pasted_tool_calls").strip()
    if not raw_calls:
        return text(posted, "pasted_reply"), [], {}
    if (problem := json_problem(raw_calls)) is not None:
        return "", None, {"pasted_tool_calls": f"The tool calls are not taken: {problem}"}
    try:
        calls = json.loads(raw_calls)
    except json.JSONDecodeError as exc:
        problem = f"The tool calls are not valid JSON: {exc.msg} (line {exc.lineno})."
        return "", None, {"pasted_tool_calls": problem}
    return text(posted, "pasted_reply"), calls, {}


async def _save(
    request: Request[Any, Any, Any],
    platform: Platform,
    dataset: Dataset,
    case: TestCase | None,
    form: CaseForm,
    posted: Mapping[str, Any],
    content: TestCaseContent,
    store_new: Callable[[TestCaseContent], Awaitable[str]] | None = None,
) -> Response[Any]:
    project_id = session_of(request).project_id

    async def store() -> str:
        if case is None and store_new is not None:
            return await store_new(content)
        if case is None:
            created, _ = await case_service.create_test_case(
                platform, project_id, dataset.id, content
            )
            return f"/cases/{created.id}?saved=1"
        await case_service.update_test_case(
            platform, project_id, case.id, lambda _: content, based_on=_based_on(posted, case)
        )
        return f"/cases/{case.id}?saved=1"

    try:
        location = await once(
            platform, project_id, posted.get("form_id"), f"/datasets/{dataset.id}", store
        )
    except (InvalidInput, Conflict) as exc:
        errors, status = _refusal(exc)
        # Saved over by someone else: the next Save, made knowing it, replaces theirs.
        based_on = exc.current_revision if isinstance(exc, StaleRevision) else None
        return editor(
            request, dataset, case, form, posted, errors=errors, status_code=status,
            based_on=based_on,
        )  # fmt: skip
    return redirect(request, location)


def _based_on(posted: Mapping[str, Any], case: TestCase) -> int:
    """The revision the person was editing (the form says; else the one loaded now)."""
    raw = text(posted, "based_on")
    return int(raw) if raw.isdigit() else case.revision


def editor_for(
    request: Request[Any, Any, Any], dataset: Dataset, content: TestCaseContent
) -> Response[Any]:
    """The editor on content that is not a case yet (a generated draft's)."""
    return editor(request, dataset, None, case_form.from_content(content))


def editor(
    request: Request[Any, Any, Any],
    dataset: Dataset,
    case: TestCase | None,
    form: CaseForm,
    posted: Mapping[str, Any] | None = None,
    *,
    errors: dict[str, str] | None = None,
    warnings: dict[str, str] | None = None,
    preview: preview_service.JudgedPreview | None = None,
    saved: bool = False,
    added: bool = False,
    focus: str = "",
    based_on: int | None = None,
    status_code: int = 200,
) -> Response[Any]:
    posted = posted or {}
    older_checks, free_text = (
        case_form.older_criteria(form) if form.uses_older_criteria else ([], [])
    )
    return page(
        request,
        "case_editor.html",
        status_code=status_code,
        dataset=dataset,
        case=case,
        form=form,
        errors=errors or {},
        warnings=warnings or {},
        product_names=PRODUCT_NAMES,
        older_checks=older_checks,
        free_text=free_text,
        preview=preview_view(preview) if preview else None,
        pasted_reply=text(posted, "pasted_reply"),
        pasted_tool_calls=text(posted, "pasted_tool_calls"),
        **conversation_paste.fields(form, posted),
        form_id=text(posted, "form_id") or new_form_id(),
        based_on=based_on if based_on is not None else (_based_on(posted, case) if case else None),
        saved=saved,
        added=added,
        focus=focus,  # what a person's focus moves to after the action (app.js)
        # A draft's editor posts back to itself (EDITOR_URL, set by its page).
        action_url=request.state.get(EDITOR_URL)
        or (f"/cases/{case.id}" if case else f"/datasets/{dataset.id}/cases/new"),
    )


def preview_view(outcome: preview_service.JudgedPreview) -> dict[str, Any]:
    """What the preview panel shows: the agent's reply and calls beside every verdict."""
    judged = {record.check_id: record for record in outcome.judge}
    view: dict[str, Any] = {
        "call": outcome.call,
        "did": what_the_agent_did(outcome.observation),
        "result": outcome.result,
        "checks": [
            {
                "id": result.id,
                "name": "Expected output (AI judge)"
                if result.id == "expectation"
                else PRODUCT_NAMES.get(result.type, result.type),
                "severity": result.severity,
                "status": result.status,
                "detail": result.detail,
                "score": result.score,
                "reasoning": result.reasoning,
                "judge": judged.get(result.id),
                "turn": turn_of(result),
            }
            for result in outcome.result.check_results
        ],
    }
    view["conversation"] = None
    if isinstance(outcome, PlayedPreview):
        played = outcome.played
        view["conversation"] = chat(
            played.turns, view["checks"], played.ended_by, played.not_graded_reason
        )
    return view
