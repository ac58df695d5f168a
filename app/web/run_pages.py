"""Test Runs: the list of runs, and a run's page with its results."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, get_args
from urllib.parse import urlencode
from uuid import UUID

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath

from agentlasso.domain.checks import CHECK_TYPES, PRODUCT_NAMES, CheckType, Severity
from agentlasso.domain.runs import Run, RunStatus
from agentlasso.domain.web import ResultFilter, ResultRow
from agentlasso.errors import FieldError, InvalidInput
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import decode_cursor, next_cursor, parse_id
from agentlasso.services import agents as agent_service
from agentlasso.services import datasets as dataset_service
from agentlasso.services import runs as run_service
from agentlasso.web.once import new_form_id
from agentlasso.web.page_charts import run_charts
from agentlasso.web.rendering import page, redirect
from agentlasso.web.run_live import summary_context
from agentlasso.web.sessions import session_of
from agentlasso.web.studio import SEVERITY_CHOICES

PAGE_SIZE = 50
DATASETS_LISTED = 200
Outcome = Literal["passed", "failed", "not_graded"]
OUTCOME_CHOICES = [
    ("failed", "Failed"),
    ("not_graded", "Not graded"),
    ("passed", "Passed"),
    ("", "All, failures first"),
]
FAILED_CHECK_CHOICES = [("", "Any check"), *PRODUCT_NAMES.items()]
STATUS_CHOICES = [("", "Any status")] + [
    (status, status.replace("_", " ").capitalize()) for status in get_args(RunStatus)
]
GATE_CHOICES = [("", "Passed or failed"), ("passed", "Gate passed"), ("failed", "Gate failed")]
_OUTCOMES: dict[str, Outcome] = {outcome: outcome for outcome in get_args(Outcome)}
_CHECK_TYPES: dict[str, CheckType] = {check_type: check_type for check_type in CHECK_TYPES}
_SEVERITIES: dict[str, Severity] = {"critical": "critical", "minor": "minor"}
_CURSOR = re.compile(r"^(passed|failed|not_graded):(\d{1,18})$")


class RunPages(Controller):
    """The project's runs, and each run with its case results."""

    @get("/runs", name="runs")
    async def runs(self, request: Request[Any, Any, Any], platform: PlatformDep) -> Response[Any]:
        """The project's runs, newest first, by dataset, status and gate."""
        project_id = session_of(request).project_id
        query = request.query_params
        chosen = {name: str(query.get(name) or "") for name in ("dataset", "status", "gate")}
        runs = await run_service.list_runs(
            platform, project_id, _uuid_or_none(chosen["dataset"]), _status(chosen["status"]),
            decode_cursor(query.get("cursor")) or None, PAGE_SIZE + 1,
            ci_pass={"passed": True, "failed": False}.get(chosen["gate"]),
        )  # fmt: skip
        more = next_cursor([run.seq for run in runs], PAGE_SIZE)
        datasets = await dataset_service.list_datasets(platform, project_id, 0, DATASETS_LISTED)
        names = {dataset.id: dataset.name for dataset in datasets}
        names |= await dataset_service.dataset_names(
            platform, project_id, list({run.dataset_id for run in runs} - names.keys())
        )
        return page(
            request, "runs.html", runs=runs[:PAGE_SIZE], names=names, next_cursor=more,
            filters=chosen, filter_query=_query_string(chosen),
            choices={"dataset": [("", "Any dataset")] + [(str(d.id), d.name) for d in datasets],
                     "status": STATUS_CHOICES, "gate": GATE_CHOICES},
        )  # fmt: skip

    @get("/runs/{run_id:str}", name="run")
    async def run(
        self, request: Request[Any, Any, Any], platform: PlatformDep, run_id: FromPath[str]
    ) -> Response[Any]:
        """A run: its counts, gate and judge cost (live while it runs), and its results a page
        at a time, failures first (a run with any opens on them)."""
        project_id = session_of(request).project_id
        run = await run_service.get_run(platform, project_id, parse_id(run_id, "run"))
        query = request.query_params
        chosen, shown = _result_filter(query, run)
        results = await run_service.result_page(
            platform, run, _after(query.get("cursor")), chosen, PAGE_SIZE
        )
        names = await dataset_service.dataset_names(platform, project_id, [run.dataset_id])
        after = results.next_after
        return page(
            request, "run.html", **summary_context(run), dataset_name=names.get(run.dataset_id),
            rows=[_result_row(row) for row in results.rows], filters=shown,
            filter_query=_query_string(shown, always=("outcome",)),
            next_cursor=f"{after[0]}:{after[1]}" if after else None,
            stopped_early=results.stopped_early, filtering=chosen.narrows,
            choices={"outcome": OUTCOME_CHOICES, "check_type": FAILED_CHECK_CHOICES,
                     "severity": SEVERITY_CHOICES},
            can_rerun=await _can_rerun(platform, project_id, run), form_id=new_form_id(),
            queued=query.get("queued"), **await run_charts(request, platform, run),
        )  # fmt: skip

    @post("/runs/{run_id:str}/cancel", name="cancel_run")
    async def cancel(
        self, request: Request[Any, Any, Any], platform: PlatformDep, run_id: FromPath[str]
    ) -> Response[Any]:
        """Cancel the run (a finished one stays as it ended); its results so far are kept."""
        run = await run_service.cancel_run(
            platform, session_of(request).project_id, parse_id(run_id, "run")
        )
        return redirect(request, f"/runs/{run.id}")


def _result_filter(query: Mapping[str, Any], run: Run) -> tuple[ResultFilter, dict[str, str]]:
    """The filter the page's query asks for, and the choices to show as made. With no outcome
    asked for, a run with failures opens on them (what a person opening a failed gate came
    for)."""
    names = ("outcome", "check_type", "severity", "partial", "q")
    shown = {name: str(query.get(name) or "") for name in names}
    if "outcome" not in query:
        shown["outcome"] = "failed" if run.graded > run.passed else ""
    chosen = ResultFilter(
        outcome=_OUTCOMES.get(shown["outcome"]),
        check_type=_CHECK_TYPES.get(shown["check_type"]),
        severity=_SEVERITIES.get(shown["severity"]),
        partially_graded=shown["partial"] == "yes",
        text=shown["q"].strip()[:200] or None,
    )
    return chosen, shown


def _after(cursor: str | None) -> tuple[str, int] | None:
    if not cursor:
        return None
    found = _CURSOR.match(cursor)
    if found is None:
        detail = "Use the link to the next page."
        problem = FieldError(parameter="cursor", detail=detail)
        raise InvalidInput("The cursor is not valid.", [problem])
    return found[1], int(found[2])


def _query_string(shown: Mapping[str, str], always: tuple[str, ...] = ()) -> str:
    """The filters as a query string, for the next page's link (those in `always` even when
    blank: a blank outcome is "all", not "the default")."""
    return urlencode({name: value for name, value in shown.items() if value or name in always})


def _uuid_or_none(raw: str) -> UUID | None:
    try:
        return UUID(raw) if raw else None
    except ValueError:
        return None


def _status(raw: str) -> str | None:
    return raw if raw in get_args(RunStatus) else None


async def _can_rerun(platform: PlatformDep, project_id: UUID, run: Run) -> bool:
    """A re-run calls an agent: the run's own, or for a CI-mode run the project's default."""
    if not run.is_final:
        return False
    return (
        run.agent_id is not None
        or await agent_service.default_agent(platform, project_id) is not None
    )


def _result_row(row: ResultRow) -> dict[str, Any]:
    return {
        "test_case_id": row.test_case_id,
        "trial": row.trial,
        "outcome": row.outcome,
        "partially_graded": row.partially_graded,
        "input": _one_line(row.input) if row.input is not None else "",
        "description": row.description,
        "failed_checks": [PRODUCT_NAMES.get(kind, kind) for kind in row.failed_check_types],
        "agent_error": row.agent_error,
    }


def _one_line(text: str) -> str:
    return text if len(text) <= 160 else text[:159] + "…"
