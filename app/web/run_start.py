"""Starting server-mode runs from the web app: a dataset's Start a run form, and Re-run failed
and Run again on a finished run. Each opens the new run's page, which shows it live."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath

from agentlasso.domain.agents import Agent
from agentlasso.domain.datasets import Dataset, DatasetVersion
from agentlasso.domain.runs import RunGate
from agentlasso.domain.test_cases import MAX_TAGS, Tag
from agentlasso.errors import Conflict, InvalidInput, NotFound, TooManyRequests
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.services import agents as agent_service
from agentlasso.services import dataset_versions as version_service
from agentlasso.services import rerun as rerun_service
from agentlasso.services.start_run import NewRun, start_run
from agentlasso.web.case_form import typed_tags
from agentlasso.web.compare_pages import baseline_choices
from agentlasso.web.forms import by_field, checked, optional_text, text
from agentlasso.web.objects import dataset_named
from agentlasso.web.once import new_form_id
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import session_of

AGENTS_LISTED = 200
MAX_TRIALS = 10
MAX_LABELS = 20
_NO_AGENT = "A run calls your agent: register it under Settings, Your agent, first."
GATE_CHOICES: list[tuple[RunGate, str]] = [
    ("threshold", "Pass rate reaches the threshold"),
    ("no_new_failures", "No new failures against the baseline"),
]
_GATES: dict[str, RunGate] = {gate: gate for gate, _ in GATE_CHOICES}
AUTOMATIC_BASELINE = "Automatic: newest completed run whose gate passed"
VERSIONS_LISTED = 200
_CURRENT_CASES = ("", "None: the cases as they are now")


class _RunTags(msgspec.Struct):
    """The tags a run is limited to, as the API takes them."""

    tags: Annotated[list[Tag], msgspec.Meta(max_length=MAX_TAGS)]


class RunStartPages(Controller):
    """The Start a run form of a dataset, and the re-runs of a run."""

    @get("/datasets/{dataset_id:str}/run", name="start_run_form")
    async def form(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """The form: which agent, which cases (a version, tags), how many trials, how many
        calls at once, and the gate. `?version=` and `?tags=` choose the cases beforehand."""
        dataset = await dataset_named(request, platform, dataset_id)
        agents, default = await _agents(platform, session_of(request).project_id)
        query = request.query_params
        values = {"agent": str(default.id) if default else "", "trials": "1",
                  "threshold": "100", "gate": "threshold",
                  "dataset_version": str(query.get("version") or ""),
                  "tags": str(query.get("tags") or "")}  # fmt: skip
        return await _form_page(request, platform, dataset, agents, values, {}, new_form_id())

    @post("/datasets/{dataset_id:str}/run", name="run_dataset")
    async def start(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Start the run (defaults for what the form leaves out) and open its page."""
        project_id = session_of(request).project_id
        dataset = await dataset_named(request, platform, dataset_id)
        agents, default = await _agents(platform, project_id)
        if not agents:
            raise Conflict(_NO_AGENT)
        form = await request.form()
        errors: dict[str, str] = {}
        new_run = _new_run(form, dataset.id, default, errors)
        form_id = text(form, "form_id")
        if new_run is not None:
            try:
                # The form's id as the idempotency key: the same click sent twice is one run.
                started = await start_run(platform, project_id, new_run, _key(form_id))
            except (InvalidInput, NotFound, TooManyRequests) as exc:
                errors = _refused(exc)
            else:
                return redirect(request, f"/runs/{started.run.id}")
        values = {name: text(form, name) for name in _FIELDS}
        return await _form_page(
            request, platform, dataset, agents, values, errors, form_id or new_form_id()
        )

    @post("/runs/{run_id:str}/rerun", name="rerun")
    async def rerun(
        self, request: Request[Any, Any, Any], platform: PlatformDep, run_id: FromPath[str]
    ) -> Response[Any]:
        """`Re-run failed` (only the cases that failed) or `Run again` (every case), with the
        same agent and settings; opens the new run's page."""
        form = await request.form()
        only_failed = text(form, "which") == "failed"
        run = await rerun_service.run_again(
            platform, session_of(request).project_id, parse_id(run_id, "run"),
            only_failed=only_failed, idempotency_key=_key(text(form, "form_id")),
        )  # fmt: skip
        return redirect(request, f"/runs/{run.id}")


_FIELDS = (
    "agent", "dataset_version", "tags", "trials", "concurrency", "threshold", "gate",
    "baseline_run_id", "labels",
)  # fmt: skip


def _refused(exc: InvalidInput | NotFound | TooManyRequests) -> dict[str, str]:
    """Why the run was refused, by the form's field (the agent is `agent` here, `agent_id` to
    the service); what names no field goes at the top of the form."""
    errors = by_field(exc.errors) if isinstance(exc, InvalidInput | NotFound) else {}
    if "agent_id" in errors:
        errors["agent"] = errors.pop("agent_id")
    return errors or {"": exc.detail}


def _key(form_id: str) -> str | None:
    return f"web:{form_id}" if form_id else None


async def _agents(platform: PlatformDep, project_id: UUID) -> tuple[list[Agent], Agent | None]:
    agents = await agent_service.list_agents(platform, project_id, 0, AGENTS_LISTED)
    return agents, await agent_service.default_agent(platform, project_id)


async def _form_page(
    request: Request[Any, Any, Any],
    platform: PlatformDep,
    dataset: Dataset,
    agents: list[Agent],
    values: Mapping[str, str],
    errors: dict[str, str],
    form_id: str,
) -> Response[Any]:
    project_id = session_of(request).project_id
    baselines = await baseline_choices(platform, project_id, dataset.id, AUTOMATIC_BASELINE)
    versions = await version_service.list_versions(
        platform, project_id, dataset.id, None, VERSIONS_LISTED
    )
    return page(
        request, "run_start.html", status_code=422 if errors else 200, dataset=dataset,
        agents=[(str(agent.id), agent.name) for agent in agents], values=values,
        errors=errors, form_id=form_id, max_trials=MAX_TRIALS, gates=GATE_CHOICES,
        baselines=baselines, versions=[_CURRENT_CASES, *map(_version_choice, versions)],
    )  # fmt: skip


def _version_choice(version: DatasetVersion) -> tuple[str, str]:
    frozen = version.created_at.strftime("%Y-%m-%d %H:%M UTC")
    cases = f"{version.case_count:,} case{'' if version.case_count == 1 else 's'}"
    return str(version.id), f"{version.name} ({cases}, frozen {frozen})"


def _new_run(
    form: Mapping[str, Any], dataset_id: UUID, default: Agent | None, errors: dict[str, str]
) -> NewRun | None:
    """The run the form asks for; None with `errors` by field when it asks for something wrong."""
    agent_id = _agent_id(optional_text(form, "agent"), default, errors)
    trials = _whole(form, "trials", 1, (1, MAX_TRIALS), errors)
    concurrency = _whole(form, "concurrency", None, (1, 1_000_000), errors)
    threshold = _percent(optional_text(form, "threshold"), errors)
    labels = _labels(text(form, "labels"), errors)
    gate = _GATES.get(text(form, "gate") or "threshold")
    if gate is None:
        errors["gate"] = "Choose one of the gates."
    baseline_id = _baseline_id(optional_text(form, "baseline_run_id"), errors)
    tags = _tags(text(form, "tags"), errors)
    if errors or agent_id is None or gate is None:
        return None
    return NewRun(
        dataset_id=dataset_id, agent_id=agent_id, trials=trials or 1, concurrency=concurrency,
        pass_threshold=threshold, labels=labels or None, gate=gate, baseline_run_id=baseline_id,
        tags=tags, dataset_version=optional_text(form, "dataset_version"),
    )  # fmt: skip


def _tags(typed: str, errors: dict[str, str]) -> tuple[str, ...] | None:
    """The tags typed comma-separated, read by the API's rules; None: every case."""
    written = checked({"tags": typed_tags(typed)}, _RunTags, errors)
    return tuple(dict.fromkeys(written.tags)) if written and written.tags else None


def _agent_id(raw: str | None, default: Agent | None, errors: dict[str, str]) -> UUID | None:
    if raw is None:
        if default is None:
            errors["agent"] = "Choose the agent to call."
        return default.id if default else None
    try:
        return UUID(raw)
    except ValueError:
        errors["agent"] = "Choose one of your agents."
        return None


def _baseline_id(raw: str | None, errors: dict[str, str]) -> UUID | None:
    """The baseline chosen; None: the server chooses it when the run is created."""
    if raw is None:
        return None
    try:
        return UUID(raw)
    except ValueError:
        errors["baseline_run_id"] = "Choose one of the dataset's completed runs."
        return None


def _whole(
    form: Mapping[str, Any],
    name: str,
    blank: int | None,
    bounds: tuple[int, int],
    errors: dict[str, str],
) -> int | None:
    raw = optional_text(form, name)
    if raw is None:
        return blank
    if not raw.isdigit() or not bounds[0] <= int(raw) <= bounds[1]:
        errors[name] = f"A whole number from {bounds[0]:,} to {bounds[1]:,}."
        return None
    return int(raw)


def _percent(raw: str | None, errors: dict[str, str]) -> float:
    if raw is None:
        return 1.0
    try:
        value = float(raw.rstrip("%"))
    except ValueError:
        value = -1.0
    if not 0 <= value <= 100:
        errors["threshold"] = "A percentage from 0 to 100."
        return 1.0
    return value / 100


def _labels(raw: str, errors: dict[str, str]) -> dict[str, str]:
    """`key: value` lines (blank lines skipped)."""
    labels: dict[str, str] = {}
    for line in filter(None, (line.strip() for line in raw.splitlines())):
        key, colon, value = line.partition(":")
        if not colon or not key.strip() or len(value.strip()) > 500:
            errors["labels"] = "One label a line, as key: value (values up to 500 characters)."
            return {}
        labels[key.strip()] = value.strip()
    if len(labels) > MAX_LABELS:
        errors["labels"] = f"At most {MAX_LABELS} labels."
    return labels
