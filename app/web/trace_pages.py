"""Traces: the project's traces (searched, filtered, a page at a time), a trace's page, and
Add to dataset, which makes a test case of one trace or of several."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath

from agentlasso.db.traces import TraceRow
from agentlasso.domain.test_cases import TestCase
from agentlasso.errors import Conflict, InvalidInput, NotFound
from agentlasso.http.auth import PlatformDep
from agentlasso.services import agent_traces
from agentlasso.services import datasets as dataset_service
from agentlasso.services import trace_conversations as conversations
from agentlasso.services import traces as trace_service
from agentlasso.services.platform import Platform
from agentlasso.services.trace_conversations import ConversationView
from agentlasso.web import trace_views
from agentlasso.web.forms import field_name, text
from agentlasso.web.once import new_form_id, once
from agentlasso.web.rendering import page, redirect
from agentlasso.web.server_timing import spent
from agentlasso.web.sessions import session_of
from agentlasso.web.trace_conversation_forms import (
    ConversationChoice,
    offered_conversation,
    posted_conversation,
)
from agentlasso.web.trace_forms import (
    MAX_TRACES_ADDED,
    TraceChoice,
    chosen_trace_ids,
    list_filters,
    offered_choice,
    posted_choice,
    posted_trace_ids,
)

PAGE_SIZE = 50
DATASETS_LISTED = 200


class TracePages(Controller):
    """The project's traces, each trace, and test cases made from them."""

    @get("/traces", name="traces")
    async def traces(self, request: Request[Any, Any, Any], platform: PlatformDep) -> Response[Any]:
        """The project's traces, newest first, 50 a page, searched and filtered."""
        project_id = session_of(request).project_id
        filters = list_filters(request.query_params)
        cursor = request.query_params.get("cursor")
        started = time.perf_counter()
        (rows, next_cursor), tools = await asyncio.gather(
            trace_service.list_traces(platform, project_id, filters.applied, cursor, PAGE_SIZE),
            trace_service.recent_tool_names(platform, project_id),
        )
        spent(request, "db", time.perf_counter() - started)
        if filters.applied.tool and filters.applied.tool not in tools:
            tools = sorted([*tools, filters.applied.tool])
        return page(
            request, "traces.html", rows=[trace_views.list_row(row) for row in rows],
            next_cursor=next_cursor, first_page=not cursor, filters=filters.shown,
            filter_errors=filters.errors, filtering=filters.narrows, filter_query=filters.query(),
            tool_choices=[("", "Any tool"), *((tool, tool) for tool in tools)],
            endpoint=f"{_base_url(request, platform)}/v1/traces",
        )  # fmt: skip

    @get("/traces/add", name="add_traces_form")
    async def add_form(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Add to dataset for the traces ticked on the list."""
        project_id = session_of(request).project_id
        trace_ids = chosen_trace_ids(request.query_params.getall("trace", []))
        if len(trace_ids) > MAX_TRACES_ADDED:
            errors = {"": f"Choose at most {MAX_TRACES_ADDED} traces at once."}
            return await _add_page(request, platform, [], {}, errors, status_code=422)
        traces = await trace_service.trace_summaries(platform, project_id, trace_ids)
        choices = [
            offered_choice(index, trace, trace_service.checks_offered(trace))
            for index, trace in enumerate(traces)
        ]
        return await _add_page(request, platform, choices, {}, {})

    @post("/traces/add", name="add_traces")
    async def add(self, request: Request[Any, Any, Any], platform: PlatformDep) -> Response[Any]:
        """A test case of each trace, in the chosen dataset, with the checks left ticked."""
        project_id = session_of(request).project_id
        form = await request.form()
        traces = await trace_service.trace_summaries(platform, project_id, posted_trace_ids(form))
        errors: dict[str, str] = {}
        choices = [
            posted_choice(form, index, trace, trace_service.checks_offered(trace), errors)
            for index, trace in enumerate(traces)
        ]
        dataset_id = _dataset_id(text(form, "dataset"), errors)
        if not choices:
            errors[""] = "Choose at least one trace with an input."
        if errors or dataset_id is None:
            return await _add_page(request, platform, choices, form, errors, status_code=422)
        made: list[TestCase] = []

        async def add_all() -> str:
            for choice in choices:
                case, _, _ = await trace_service.make_case_from_trace(
                    platform, project_id, choice.trace, dataset_id,
                    checks=choice.kept_checks(), expected_output=choice.expected(),
                )  # fmt: skip
                made.append(case)
            return _landing(made, dataset_id)

        fallback = f"/datasets/{dataset_id}"
        try:
            location = await once(platform, project_id, form.get("form_id"), fallback, add_all)
        except (NotFound, InvalidInput, Conflict) as exc:
            left, errors = _refused(choices, made, exc)
            return await _add_page(request, platform, left, form, errors, status_code=422)
        return redirect(request, location)

    @get("/traces/{trace_id:str}", name="trace")
    async def trace(
        self, request: Request[Any, Any, Any], platform: PlatformDep, trace_id: FromPath[str]
    ) -> Response[Any]:
        """A trace: its conversation, tool-call timeline, totals, raw spans, the cases made
        from it, and Add to dataset."""
        project_id = session_of(request).project_id
        view = await trace_service.get_trace(platform, project_id, trace_id)
        trace = view.trace
        origin_ns = trace_views.started_ns(trace, view.spans)
        choice = offered_choice(0, trace, trace_service.checks_offered(trace))
        turns = conversations.trace_turns(trace)
        position = await conversations.position_in_conversation(platform, project_id, trace)
        return page(
            request, "trace.html", trace=trace, title=trace.name or f"Trace {trace.trace_id[:8]}",
            started=trace_views.moment(trace.started_at),
            took=trace_views.duration(trace.duration_ms), tokens=trace_views.tokens(trace),
            shown_input=trace_views.shown_value(trace.input),
            conversation=trace_views.conversation(trace),
            calls=trace_views.timeline(trace, view.spans),
            spans=trace_views.span_rows(view.spans, origin_ns),
            cases=view.cases, position=position, evaluations=view.evaluations,
            evaluation_checks=[
                trace_views.check_items(evaluation.result) for evaluation in view.evaluations
            ],
            traced_results=await agent_traces.results_of_trace(platform, project_id, trace_id),
            conversation_href=trace_views.conversation_href(trace.conversation_id),
            conversation_choice=offered_conversation(turns) if turns else None,
            add_action=_turns_action(trace),
            **await _add_form_context(platform, project_id, [choice], {}, {}),
        )  # fmt: skip

    @get("/traces/conversations/{conversation_id:str}", name="trace_conversation")
    async def conversation(
        self, request: Request[Any, Any, Any], platform: PlatformDep, conversation_id: FromPath[str]
    ) -> Response[Any]:
        """A conversation: the traces sharing its id, a turn each in time order, the cases
        made from them, and Add to dataset as a conversation case."""
        project_id = session_of(request).project_id
        view = await conversations.get_conversation(platform, project_id, conversation_id)
        choice = offered_conversation(view.turns)
        return await _conversation_page(request, platform, view, choice, {}, {})

    @post("/traces/conversations/{conversation_id:str}/add", name="add_trace_conversation")
    async def add_conversation(
        self, request: Request[Any, Any, Any], platform: PlatformDep, conversation_id: FromPath[str]
    ) -> Response[Any]:
        """A conversation case of the conversation's turns, each with the checks left ticked."""
        project_id = session_of(request).project_id
        view = await conversations.get_conversation(platform, project_id, conversation_id)
        form = await request.form()
        errors: dict[str, str] = {}
        choice = posted_conversation(form, view.turns, errors)
        dataset_id = _dataset_id(text(form, "dataset"), errors)

        async def add() -> str:
            assert dataset_id is not None
            case, _ = await conversations.make_case_from_conversation(
                platform, project_id, view, dataset_id, turn_checks=choice.kept_turn_checks(),
                checks=(), expected_output=choice.expected(),
            )  # fmt: skip
            return f"/cases/{case.id}?added=1"

        if not errors and dataset_id is not None:
            location = await _added_once(platform, project_id, form, dataset_id, add, errors)
            if location is not None:
                return redirect(request, location)
        return await _conversation_page(request, platform, view, choice, form, errors, 422)

    @post("/traces/{trace_id:str}/add-conversation", name="add_trace_turns")
    async def add_trace_turns(
        self, request: Request[Any, Any, Any], platform: PlatformDep, trace_id: FromPath[str]
    ) -> Response[Any]:
        """A conversation case of one trace whose input holds several user messages."""
        project_id = session_of(request).project_id
        trace = await trace_service.get_trace_summary(platform, project_id, trace_id)
        form = await request.form()
        errors: dict[str, str] = {}
        choice = posted_conversation(form, conversations.trace_turns(trace), errors)
        dataset_id = _dataset_id(text(form, "dataset"), errors)

        async def add() -> str:
            assert dataset_id is not None
            case, _, _ = await trace_service.make_case_from_trace(
                platform, project_id, trace, dataset_id, turn_checks=choice.kept_turn_checks(),
                checks=(), expected_output=choice.expected(),
            )  # fmt: skip
            return f"/cases/{case.id}?added=1"

        if not errors and dataset_id is not None:
            location = await _added_once(platform, project_id, form, dataset_id, add, errors)
            if location is not None:
                return redirect(request, location)
        context = await _add_form_context(platform, project_id, [], form, errors)
        context |= {"conversation_choice": choice, "add_action": _turns_action(trace)}
        return page(request, "trace_add.html", status_code=422, **context)


async def _added_once(
    platform: Platform,
    project_id: UUID,
    form: Mapping[str, Any],
    dataset_id: UUID,
    add: Callable[[], Awaitable[str]],
    errors: dict[str, str],
) -> str | None:
    """Where adding the case (once per form) led; None with the refusal noted by field."""
    try:
        return await once(platform, project_id, form.get("form_id"), f"/datasets/{dataset_id}", add)
    except NotFound as exc:
        errors["dataset" if exc.detail != trace_service.NO_TRACE else ""] = exc.detail
    except (InvalidInput, Conflict) as exc:
        errors[""] = exc.detail
    return None


async def _conversation_page(
    request: Request[Any, Any, Any],
    platform: Platform,
    view: ConversationView,
    choice: ConversationChoice,
    form: Mapping[str, Any],
    errors: dict[str, str],
    status_code: int = 200,
) -> Response[Any]:
    """A conversation's page with its Add to dataset form, as offered or as posted."""
    project_id = session_of(request).project_id
    context = await _add_form_context(platform, project_id, [], form, errors)
    return page(
        request, "trace_conversation.html", status_code=status_code,
        conversation_id=view.conversation_id, turns=trace_views.turn_rows(view.traces),
        more=view.more, cases=view.cases, conversation_choice=choice,
        add_action=f"{trace_views.conversation_href(view.conversation_id)}/add", **context,
    )  # fmt: skip


def _turns_action(trace: TraceRow) -> str:
    return f"/traces/{trace.trace_id}/add-conversation"


def _dataset_id(raw: str, errors: dict[str, str]) -> UUID | None:
    try:
        return UUID(raw)
    except ValueError:
        errors["dataset"] = "Choose the dataset the test cases go to."
        return None


def _landing(made: Sequence[TestCase], dataset_id: UUID) -> str:
    """One case: its editor, to go on with it; several: the dataset, saying how many came."""
    if len(made) == 1:
        return f"/cases/{made[0].id}?added=1"
    return f"/datasets/{dataset_id}?imported={len(made)}"


def _refused(
    choices: list[TraceChoice], made: Sequence[TestCase], exc: NotFound | InvalidInput | Conflict
) -> tuple[list[TraceChoice], dict[str, str]]:
    """The traces not yet added (renumbered), and the refusal by field: the dataset, the trace
    it stopped at, or the form as a whole."""
    left = choices[len(made) :]
    for index, choice in enumerate(left):
        choice.index = index
    stopped_at = left[0].field
    errors: dict[str, str] = {}
    if isinstance(exc, NotFound):
        errors[stopped_at if exc.detail == trace_service.NO_TRACE else "dataset"] = exc.detail
    elif isinstance(exc, InvalidInput):
        for problem in exc.errors or []:
            where = field_name(problem.pointer)
            key = f"{stopped_at}-expected_output" if where == "expected_output" else stopped_at
            errors.setdefault(key, problem.detail)
        errors.setdefault(stopped_at, exc.detail)
    else:
        errors[""] = exc.detail
    if made:
        errors[""] = (
            f"{_cases(len(made))} added before this stopped; they are in the dataset. "
            f"{errors.get('', '')}"
        ).strip()
    return left, errors


def _cases(count: int) -> str:
    return f"{count} test case{'' if count == 1 else 's'}"


async def _add_page(
    request: Request[Any, Any, Any],
    platform: Platform,
    choices: list[TraceChoice],
    form: Mapping[str, Any],
    errors: dict[str, str],
    status_code: int = 200,
) -> Response[Any]:
    """The Add to dataset page: each trace with its checks, as offered or as posted."""
    project_id = session_of(request).project_id
    context = await _add_form_context(platform, project_id, choices, form, errors)
    return page(request, "trace_add.html", status_code=status_code, **context)


async def _add_form_context(
    platform: Platform,
    project_id: UUID,
    choices: list[TraceChoice],
    form: Mapping[str, Any],
    errors: dict[str, str],
) -> dict[str, Any]:
    """What the Add to dataset form needs: the traces a case can start from (renumbered),
    those it cannot, the datasets, what was chosen."""
    addable = [choice for choice in choices if choice.addable]
    for index, choice in enumerate(addable):
        choice.index = index
    datasets = await dataset_service.list_datasets(platform, project_id, 0, DATASETS_LISTED)
    return {
        "choices": addable,
        "without_input": [choice.trace for choice in choices if not choice.addable],
        "dataset_choices": [("", "Choose a dataset"), *((str(d.id), d.name) for d in datasets)],
        "has_datasets": bool(datasets),
        "chosen_dataset": text(form, "dataset"),
        "add_errors": errors,
        "form_id": text(form, "form_id") or new_form_id(),
        "names": {choice.trace.trace_id: _name(choice.trace) for choice in choices},
    }


def _name(trace: TraceRow) -> str:
    return f"{trace.name or 'Trace ' + trace.trace_id[:8]}, {trace_views.moment(trace.started_at)}"


def _base_url(request: Request[Any, Any, Any], platform: Platform) -> str:
    """Where exporters reach this server: the configured public URL, else as this page was
    asked for."""
    public = platform.settings.public_url
    return (public or str(request.base_url)).rstrip("/")
