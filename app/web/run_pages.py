"""Test Runs: the list (a run's own page comes with the case cards), and the Run button."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath, FromQuery

from app.api.auth import PlatformDep
from app.api.pagination import decode_cursor, next_cursor
from app.errors import Conflict
from app.services import agents as agent_service
from app.services import datasets as dataset_service
from app.services import runs as run_service
from app.services.start_run import NewRun, start_run
from app.web.forms import text
from app.web.objects import dataset_named
from app.web.rendering import page, redirect
from app.web.sessions import session_of

PAGE_SIZE = 50


class RunPages(Controller):
    """The project's runs, and starting one from a dataset."""

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
