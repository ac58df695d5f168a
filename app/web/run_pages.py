"""Test Runs: the list, a run's page with its results, a case's card, and the Run button."""

from __future__ import annotations

import json
from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath, FromQuery

from app.api.auth import PlatformDep
from app.api.pagination import decode_cursor, next_cursor, parse_id
from app.domain.case_results import StoredResult
from app.domain.runs import Run
from app.domain.web import Revision
from app.errors import Conflict
from app.services import agents as agent_service
from app.services import datasets as dataset_service
from app.services import runs as run_service
from app.services.start_run import NewRun, start_run
from app.web.agent_reply import observation_of, what_the_agent_did
from app.web.case_form import PRODUCT_NAMES
from app.web.forms import text
from app.web.objects import dataset_named
from app.web.rendering import page, redirect
from app.web.sessions import session_of

PAGE_SIZE = 50
OUTCOME_CHOICES = [
    ("failed", "Failed"),
    ("not_graded", "Not graded"),
    ("passed", "Passed"),
    ("", "All"),
]


class RunPages(Controller):
    """The project's runs, each run and its case results, and starting one from a dataset."""

    @get("/runs", name="runs")
    async def runs(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        cursor: FromQuery[str | None] = None,
    ) -> Response[Any]:
        """The project's runs, newest first."""
        project_id = session_of(request).project_id
        runs = await run_service.list_runs(
            platform, project_id, None, None, decode_cursor(cursor) or None, PAGE_SIZE + 1
        )
        more = next_cursor([run.seq for run in runs], PAGE_SIZE)
        runs = runs[:PAGE_SIZE]
        names = await dataset_service.dataset_names(
            platform, project_id, list({run.dataset_id for run in runs})
        )
        return page(request, "runs.html", runs=runs, names=names, next_cursor=more)

    @get("/runs/{run_id:str}", name="run")
    async def run(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        run_id: FromPath[str],
        outcome: FromQuery[str | None] = None,
        cursor: FromQuery[str | None] = None,
    ) -> Response[Any]:
        """A run: its counts, gate and judge cost, and its results a page at a time (the
        failures first: a run with any opens on them)."""
        project_id = session_of(request).project_id
        run = await run_service.get_run(platform, project_id, parse_id(run_id, "run"))
        shown = _outcome_shown(outcome, run)
        results, graded = await run_service.result_page(
            platform, run, decode_cursor(cursor), shown, PAGE_SIZE + 1
        )
        more = next_cursor([result.seq for result in results], PAGE_SIZE)
        rows = [_result_row(result, graded.get(result.revision_id)) for result in results]
        names = await dataset_service.dataset_names(platform, project_id, [run.dataset_id])
        return page(
            request, "run.html", run=run, dataset_name=names.get(run.dataset_id),
            failed=run.graded - run.passed, rows=rows[:PAGE_SIZE], outcome=shown or "",
            outcomes=OUTCOME_CHOICES, next_cursor=more,
        )  # fmt: skip

    @get("/runs/{run_id:str}/cases/{test_case_id:str}", name="case_card")
    async def case_card(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        run_id: FromPath[str],
        test_case_id: FromPath[str],
        trial: FromQuery[int] = 1,
    ) -> Response[Any]:
        """One case of a run: what it asked, what the agent did, and every check's verdict
        beside it."""
        run, result, graded = await run_service.result_of_case(
            platform, session_of(request).project_id, parse_id(run_id, "run"),
            parse_id(test_case_id, "test case"), trial,
        )  # fmt: skip
        return page(
            request, "case_card.html", run=run, result=result, graded=graded,
            did=what_the_agent_did(observation_of(result)),
            checks=[
                {"name": PRODUCT_NAMES.get(check.type, check.type), "check": check}
                for check in result.result.check_results
            ],
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

    @post("/datasets/{dataset_id:str}/run", name="run_dataset")
    async def run_dataset(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Start a server-mode run of the dataset against the project's agent."""
        project_id = session_of(request).project_id
        dataset = await dataset_named(request, platform, dataset_id)
        agent = await agent_service.default_agent(platform, project_id)
        if agent is None:
            raise Conflict("A run calls your agent: register it under Settings, Your agent, first.")
        form = await request.form()
        form_id = text(form, "form_id")
        # The form's id as the idempotency key: the same click sent twice starts one run.
        key = f"web:{form_id}" if form_id else None
        request_run = NewRun(dataset_id=dataset.id, agent_id=agent.id)
        await start_run(platform, project_id, request_run, key)
        return redirect(request, "/runs")


@get("/traces", name="traces")
async def traces(request: Request[Any, Any, Any]) -> Response[Any]:
    """Traces of real conversations: says that this server does not take them in yet."""
    return page(request, "traces.html")


def _outcome_shown(asked: str | None, run: Run) -> str | None:
    """The outcome the results are filtered by: as asked, else the failures when there are
    any (what a person opening a failed gate came for), else all."""
    if asked is not None:
        return asked if asked in {"failed", "not_graded", "passed"} else None
    return "failed" if run.graded > run.passed else None


def _result_row(result: StoredResult, graded: Revision | None) -> dict[str, Any]:
    failed_checks = [
        PRODUCT_NAMES.get(check.type, check.type)
        for check in result.result.check_results
        if check.status == "failed"
    ]
    content = graded.content if graded else None
    return {
        "test_case_id": result.test_case_id,
        "trial": result.trial,
        "outcome": result.outcome,
        "input": _one_line(content.input) if content else "",
        "description": content.description if content else None,
        "failed_checks": failed_checks,
        "agent_error": result.agent_error,
    }


def _one_line(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:159] + "…"
