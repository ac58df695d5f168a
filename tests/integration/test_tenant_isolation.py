"""Tenant isolation: another project's key never reads, changes or learns of a project's objects.

Project A (the `client` fixture) holds a dataset with three cases, an agent on a fake agent
server, a CI-mode run with one result posted (started with an Idempotency-Key) and a server-mode
run (it stays `queued`: no worker runs here). Project B, with its own dataset, case, agent and
run, tries every /api/v1 route on A's objects. Each attempt must answer a 404 problem+json (a
404 naming the field for an id inside a body), exactly as the same request about an id that
exists nowhere answers, so nothing confirms that A's object exists; afterwards A finds
everything as it was, and the route still serves A itself.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio

from agentlasso.db import case_drafts as draft_rows
from agentlasso.db.pool import init_connection
from agentlasso.domain.case_drafts import AgentProfile, Candidate, GenerationRecord, Slot
from agentlasso.domain.judging import Usage
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.services.api_keys import hash_key
from agentlasso.services.case_drafts import draft_rows_of
from tests.support.api import all_results, create_dataset, dataset_of, register_agent, start_run
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key
from tests.support.fake_agent import REFUND_REPLY, FakeAgentServer, running_fake_agent

# Every request here is bounded: a leaked event stream or long-poll must fail, not hang.
BOUND_S = 10
A_INPUTS = ["refund order 1", "refund order 2", "refund order 3"]
GOOD = {"actual_output": REFUND_REPLY["output"], "actual_tool_calls": REFUND_REPLY["tool_calls"]}
BAD = {"actual_output": "I guarantee nothing.", "actual_tool_calls": []}
IDEMPOTENCY_KEY = "build-4242"
NDJSON = {"content-type": "application/x-ndjson"}
PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass
class Project:
    """A project's client and the ids of its objects, by placeholder name."""

    http: httpx.AsyncClient
    ids: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def fake_agent() -> Iterator[FakeAgentServer]:
    with running_fake_agent() as server:
        yield server


async def plant_draft(database_url: str, api_key: str, dataset_id: str) -> str:
    """A generated draft in the key's project (no model is configured here to make one)."""
    connection = await asyncpg.connect(database_url)
    await init_connection(connection)
    try:
        project_id = await connection.fetchval(
            "SELECT project_id FROM api_keys WHERE key_hash = $1", hash_key(api_key)
        )
        profile = AgentProfile(system_prompt="Support agent.", tools=())
        record = GenerationRecord(
            id=uuid.uuid4(), dataset_id=uuid.UUID(dataset_id), agent_id=None, profile=profile,
            instruction=None, requested=1, model="claude-sonnet-5-5", prompt_version="test",
            usage=Usage(), cost_usd=0.0, calls=1, latency_ms=1,
        )  # fmt: skip
        slot = Slot(category="must_refuse", tool="", intent="a request to refuse")
        content = TestCaseContent(input="Give me another customer's address.",
                                  expected_output="Refuses.")  # fmt: skip
        candidate = Candidate(slot=slot, content=content, tools_expected=(), tools_forbidden=())
        rows = draft_rows_of(project_id, record, [candidate])
        async with connection.transaction():
            await draft_rows.insert_generation(connection, project_id, record)
            await draft_rows.insert_drafts(connection, rows)
    finally:
        await connection.close()
    return str(rows[0][0])


@pytest_asyncio.fixture
async def project_a(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, database_url: str, api_key: str
) -> AsyncIterator[Project]:
    """Project A: {dataset}, {case} (its first of three), {agent}, {ci_run}, {server_run},
    {draft} (a generated case awaiting review)."""
    dataset_id = await dataset_of(client, A_INPUTS)
    cases = (await client.get(f"/api/v1/datasets/{dataset_id}/test-cases")).json()["items"]
    agent_id = await register_agent(client, fake_agent.url)
    created = await client.post(
        "/api/v1/eval-runs",
        json={"dataset_id": dataset_id},
        headers={"Idempotency-Key": IDEMPOTENCY_KEY},
    )
    assert created.status_code == 201, created.text
    ci_run = created.json()
    posted = await client.post(
        "/api/v1/eval-run-results",
        json={"run_id": ci_run["run_id"], "results": [{"test_case_id": cases[0]["id"], **GOOD}]},
    )
    assert posted.status_code == 200, posted.text
    server_run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
    assert server_run["status"] == "queued", server_run
    draft_id = await plant_draft(database_url, api_key, dataset_id)
    project = Project(
        client,
        {
            "dataset": dataset_id,
            "case": cases[0]["id"],
            "agent": agent_id,
            "ci_run": ci_run["run_id"],
            "server_run": server_run["run_id"],
            "draft": draft_id,
        },
    )
    yield project
    # Leave no queued work behind for a worker a later test might start on this queue.
    await client.post(f"/api/v1/eval-runs/{server_run['run_id']}/cancel")


@pytest_asyncio.fixture
async def project_b(
    base_url: str, database_url: str, fake_agent: FakeAgentServer
) -> AsyncIterator[Project]:
    """Project B, with its own objects: {own_dataset}, {own_case}, {own_agent}, {own_ci_run}."""
    key = await new_project_key(database_url)
    async with httpx.AsyncClient(
        base_url=base_url, headers={"x-api-key": key}, timeout=BOUND_S
    ) as http:
        dataset_id = await dataset_of(http, ["project B's own case"])
        cases = (await http.get(f"/api/v1/datasets/{dataset_id}/test-cases")).json()["items"]
        agent_id = await register_agent(http, fake_agent.url, name="project B's bot")
        run = await start_run(http, dataset_id=dataset_id)
        yield Project(
            http,
            {
                "own_dataset": dataset_id,
                "own_case": cases[0]["id"],
                "own_agent": agent_id,
                "own_ci_run": run["run_id"],
            },
        )


# ---------------------------------------------------------------------------------------------
# Sending a request and comparing answers


async def first_event(response: httpx.Response) -> bytes:
    """The first Server-Sent Event of a stream (the stream itself may never end)."""
    lines: list[str] = []
    async for line in response.aiter_lines():
        if not line and any(seen.startswith("data:") for seen in lines):
            break
        lines.append(line)
    return "\n".join(lines).encode()


async def send(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    json_body: Any = None,
    ndjson: bytes | None = None,
) -> httpx.Response:
    """The response with its body read; of an event stream, only its first event."""
    headers = NDJSON if ndjson is not None else None
    async with (
        asyncio.timeout(BOUND_S),
        http.stream(
            method, url, json=json_body, content=ndjson, headers=headers, timeout=BOUND_S
        ) as response,
    ):
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            body = await first_event(response)
        else:
            body = await response.aread()
    kept = {
        name: value
        for name, value in response.headers.items()
        if name not in ("content-encoding", "content-length", "transfer-encoding")
    }
    return httpx.Response(response.status_code, headers=kept, content=body)


def fill(template: Any, ids: dict[str, str]) -> Any:
    """The template with each "{name}" replaced by that id (paths and JSON bodies alike)."""
    if isinstance(template, str):
        return PLACEHOLDER.sub(lambda match: ids[match[1]], template)
    if isinstance(template, dict):
        return {key: fill(value, ids) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, ids) for value in template]
    return template


def unknown_ids(ids: dict[str, str]) -> dict[str, str]:
    """The same names, each bound to an id that exists in no project."""
    return {name: str(uuid.uuid4()) for name in ids}


def normalised(response: httpx.Response, ids: dict[str, str]) -> tuple[int, str, Any]:
    """Status, media type and body, with each id written as its placeholder name."""
    text = response.text
    for name, value in ids.items():
        text = text.replace(value, "{" + name + "}")
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    return response.status_code, response.headers.get("content-type", ""), body


def shown(response: httpx.Response) -> str:
    """The start of a response, for a failure message."""
    return f"{response.status_code} {response.headers.get('content-type')} {response.text[:300]!r}"


# ---------------------------------------------------------------------------------------------
# What project A sees of its own objects


async def snapshot(a: Project, agent: FakeAgentServer) -> dict[str, Any]:
    """Everything project A can read of its objects, by what it is (read all at once)."""
    ids = a.ids

    async def read(url: str) -> tuple[int, Any]:
        response = await a.http.get(url)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.status_code, response.json()
        return response.status_code, response.text

    reads = {
        "dataset": read(f"/api/v1/datasets/{ids['dataset']}"),
        "dataset's test cases": read(f"/api/v1/datasets/{ids['dataset']}/test-cases?limit=1000"),
        "dataset's export": read(f"/api/v1/datasets/{ids['dataset']}/test-cases/export"),
        "dataset's drafts": read(f"/api/v1/datasets/{ids['dataset']}/drafts?limit=1000"),
        "test case": read(f"/api/v1/test-cases/{ids['case']}"),
        "agent": read(f"/api/v1/agents/{ids['agent']}"),
        "dataset list": read("/api/v1/datasets?limit=1000"),
        "agent list": read("/api/v1/agents?limit=1000"),
        "run list": read("/api/v1/eval-runs?limit=1000"),
        "CI-mode run": read(f"/api/v1/eval-runs/{ids['ci_run']}"),
        "server-mode run": read(f"/api/v1/eval-runs/{ids['server_run']}"),
        "CI-mode run's results": read(f"/api/v1/eval-runs/{ids['ci_run']}/results?limit=1000"),
        "server-mode run's results": read(
            f"/api/v1/eval-runs/{ids['server_run']}/results?limit=1000"
        ),
    }
    answers = dict(zip(reads, await asyncio.gather(*reads.values()), strict=True))
    return {**answers, "calls to A's agent": list(agent.requests)}


def assert_unchanged(before: dict[str, Any], after: dict[str, Any], attempt: str) -> None:
    for what, was in before.items():
        assert after[what] == was, (
            f"LEAK: after project B's {attempt}, project A's {what} changed:\n"
            f"before: {was!r}\nafter:  {after[what]!r}"
        )


# ---------------------------------------------------------------------------------------------
# Every route that names one of A's objects in its path


@dataclass(frozen=True)
class Route:
    """A request on one of A's objects; `owner_status` is what A itself gets for it."""

    method: str
    path: str  # with {dataset}, {case}, {agent}, {ci_run} or {server_run}
    body: Any = None
    ndjson: bytes | None = None
    owner_status: int = 200

    def __str__(self) -> str:
        return f"{self.method} {self.path}"

    async def send(self, http: httpx.AsyncClient, ids: dict[str, str]) -> httpx.Response:
        return await send(
            http, self.method, fill(self.path, ids), json_body=fill(self.body, ids),
            ndjson=self.ndjson,
        )  # fmt: skip


def run_routes(run: str) -> list[Route]:
    """The routes of a run; `run` is ci_run or server_run."""
    path = f"/api/v1/eval-runs/{{{run}}}"
    return [
        Route("GET", path),
        Route("GET", f"{path}?wait_s=1"),
        Route("GET", f"{path}/events"),
        Route("GET", f"{path}/results"),
        Route("GET", f"{path}/results?outcome=passed&limit=10"),
        Route("GET", f"{path}/compare"),
        Route("GET", f"{path}/compare?bucket=new_case&limit=5"),
        Route("POST", f"{path}/cancel"),
    ]


ROUTES = [
    Route("GET", "/api/v1/datasets/{dataset}"),
    Route(
        "PATCH",
        "/api/v1/datasets/{dataset}",
        {"name": "taken over", "description": "by B", "data_context": {"region": "us"}},
    ),
    # A itself is refused while its runs go on (a 409 naming them): B must not learn even that.
    Route("DELETE", "/api/v1/datasets/{dataset}", owner_status=409),
    Route("GET", "/api/v1/datasets/{dataset}/test-cases"),
    Route("GET", "/api/v1/datasets/{dataset}/test-cases?limit=1"),
    Route(
        "POST",
        "/api/v1/datasets/{dataset}/test-cases",
        {"input": "planted by B", "checks": []},
        owner_status=201,
    ),
    Route(
        "POST",
        "/api/v1/datasets/{dataset}/test-cases/import",
        ndjson=b'{"input": "planted by B", "checks": []}\n',
        owner_status=201,
    ),
    Route("GET", "/api/v1/datasets/{dataset}/test-cases/export"),
    Route("GET", "/api/v1/datasets/{dataset}/flaky"),
    # No model key on this server: A itself is told so (409), B must not learn even that.
    Route("POST", "/api/v1/datasets/{dataset}/generate", {"system_prompt": "x"}, owner_status=409),
    Route("GET", "/api/v1/datasets/{dataset}/drafts"),
    Route("GET", "/api/v1/datasets/{dataset}/drafts?status=pending&limit=1"),
    Route(
        "POST",
        "/api/v1/datasets/{dataset}/drafts/{draft}/accept",
        {"expected_output": "taken over by B"},
        owner_status=201,
    ),
    Route("POST", "/api/v1/datasets/{dataset}/drafts/{draft}/reject", owner_status=204),
    Route("POST", "/api/v1/datasets/{dataset}/drafts/{draft}/regenerate", owner_status=409),
    Route("GET", "/api/v1/test-cases/{case}"),
    Route("PATCH", "/api/v1/test-cases/{case}", {"input": "tampered by B", "checks": []}),
    Route("DELETE", "/api/v1/test-cases/{case}", owner_status=204),
    Route("POST", "/api/v1/test-cases/{case}/preview", {"actual_output": "x"}),
    Route("GET", "/api/v1/agents/{agent}"),
    Route(
        "PATCH",
        "/api/v1/agents/{agent}",
        {"url": "http://127.0.0.1:9/stolen", "headers": {"authorization": "Bearer B"}},
    ),
    Route("DELETE", "/api/v1/agents/{agent}", owner_status=204),
    Route("POST", "/api/v1/agents/{agent}/invoke", {"input": "refund order 1234"}),
    *run_routes("ci_run"),
    *run_routes("server_run"),
]


@pytest.mark.parametrize("route", ROUTES, ids=str)
async def test_another_projects_key_gets_404_on_every_route(
    route: Route, project_a: Project, project_b: Project, fake_agent: FakeAgentServer
) -> None:
    before = await snapshot(project_a, fake_agent)

    unknown = unknown_ids(project_a.ids)
    attempt, nowhere = await asyncio.gather(
        route.send(project_b.http, project_a.ids), route.send(project_b.http, unknown)
    )
    assert attempt.status_code == 404, (
        f"LEAK: {route} answered project B, for project A's object: {shown(attempt)}"
    )
    assert_problem(attempt, 404)
    assert normalised(attempt, project_a.ids) == normalised(nowhere, unknown), (
        f"{route} answers project B differently for A's object than for an id that exists "
        "nowhere: it confirms that A's object exists"
    )

    assert_unchanged(before, await snapshot(project_a, fake_agent), str(route))

    # The route is real and serves its owner (so the 404 above is not a mistyped path).
    owned = await route.send(project_a.http, project_a.ids)
    assert owned.status_code == route.owner_status, f"{route} for project A: {shown(owned)}"


# ---------------------------------------------------------------------------------------------
# A's ids inside a request body


@dataclass(frozen=True)
class BodyIds:
    """A request whose body names A's objects (and maybe B's own), and B's expected refusal."""

    what: str
    path: str  # may name B's own objects: {own_dataset}
    body: dict[str, Any]
    status: int
    pointer: str | None = None

    def __str__(self) -> str:
        return self.what


BODY_IDS = [
    BodyIds(
        "POST /eval-runs, A's dataset (CI mode)",
        "/api/v1/eval-runs",
        {"dataset_id": "{dataset}"},
        404,
        "/dataset_id",
    ),
    BodyIds(
        "POST /eval-runs, A's dataset and A's agent",
        "/api/v1/eval-runs",
        {"dataset_id": "{dataset}", "agent_id": "{agent}"},
        404,
        "/dataset_id",
    ),
    BodyIds(
        "POST /eval-runs, A's dataset and B's agent",
        "/api/v1/eval-runs",
        {"dataset_id": "{dataset}", "agent_id": "{own_agent}"},
        404,
        "/dataset_id",
    ),
    BodyIds(
        "POST /eval-runs, B's dataset and A's agent",
        "/api/v1/eval-runs",
        {"dataset_id": "{own_dataset}", "agent_id": "{agent}"},
        404,
        "/agent_id",
    ),
    BodyIds(
        "POST /datasets/{id}/generate, B's dataset and A's agent",
        "/api/v1/datasets/{own_dataset}/generate",
        {"agent_id": "{agent}"},
        404,
        "/agent_id",
    ),
    # A run named in the body of /eval-run-results is answered as an id in a path would be.
    BodyIds(
        "POST /eval-run-results, A's CI-mode run",
        "/api/v1/eval-run-results",
        {"run_id": "{ci_run}", "results": [{"test_case_id": "{case}", **BAD}]},
        404,
    ),
    BodyIds(
        "POST /eval-run-results, A's server-mode run",
        "/api/v1/eval-run-results",
        {"run_id": "{server_run}", "results": [{"test_case_id": "{case}", **BAD}]},
        404,
    ),
    BodyIds(
        "POST /eval-run-results, B's run and A's test case",
        "/api/v1/eval-run-results",
        {"run_id": "{own_ci_run}", "results": [{"test_case_id": "{case}", **BAD}]},
        422,
        "/results/0/test_case_id",
    ),
]


@pytest.mark.parametrize("case", BODY_IDS, ids=str)
async def test_ids_of_another_projects_objects_in_a_body_are_refused(
    case: BodyIds, project_a: Project, project_b: Project, fake_agent: FakeAgentServer
) -> None:
    before = await snapshot(project_a, fake_agent)
    b_before = await all_results(project_b.http, project_b.ids["own_ci_run"])

    ids = {**project_a.ids, **project_b.ids}
    attempt = await send(
        project_b.http, "POST", fill(case.path, ids), json_body=fill(case.body, ids)
    )
    assert attempt.status_code == case.status, f"LEAK: {case} answered project B: {shown(attempt)}"
    assert_problem(attempt, case.status, pointer=case.pointer)
    unknown = unknown_ids(project_a.ids)
    elsewhere = {**unknown, **project_b.ids}
    nowhere = await send(
        project_b.http, "POST", fill(case.path, elsewhere), json_body=fill(case.body, elsewhere)
    )
    assert normalised(attempt, project_a.ids) == normalised(nowhere, unknown), (
        f"{case}: answered differently for A's object than for an id that exists nowhere"
    )

    assert_unchanged(before, await snapshot(project_a, fake_agent), case.what)
    runs = (await project_b.http.get("/api/v1/eval-runs")).json()["items"]
    assert [run["run_id"] for run in runs] == [project_b.ids["own_ci_run"]], (
        f"{case} started a run in project B"
    )
    assert await all_results(project_b.http, project_b.ids["own_ci_run"]) == b_before


async def test_an_idempotency_key_never_replays_another_projects_run(
    project_a: Project, project_b: Project, fake_agent: FakeAgentServer
) -> None:
    before = await snapshot(project_a, fake_agent)
    key = {"Idempotency-Key": IDEMPOTENCY_KEY}
    same_body = await project_b.http.post(
        "/api/v1/eval-runs", json={"dataset_id": project_a.ids["dataset"]}, headers=key
    )
    assert_problem(same_body, 404, pointer="/dataset_id")
    assert project_a.ids["ci_run"] not in same_body.text, "LEAK: A's run id in B's answer"

    own = await project_b.http.post(
        "/api/v1/eval-runs", json={"dataset_id": project_b.ids["own_dataset"]}, headers=key
    )
    assert own.status_code == 201, f"B's own run with A's key: {shown(own)}"
    assert own.json()["run_id"] != project_a.ids["ci_run"], "LEAK: B got A's run by its key"
    assert "idempotent-replayed" not in own.headers
    assert own.json()["test_cases"][0]["input"] == "project B's own case"

    assert_unchanged(before, await snapshot(project_a, fake_agent), "run with A's key")
    replayed = await project_a.http.post(
        "/api/v1/eval-runs", json={"dataset_id": project_a.ids["dataset"]}, headers=key
    )
    assert replayed.status_code == 201, replayed.text
    assert replayed.json()["run_id"] == project_a.ids["ci_run"]
    assert replayed.headers.get("idempotent-replayed") == "true"


# ---------------------------------------------------------------------------------------------
# Lists


LISTS = [
    ("/api/v1/datasets", ["own_dataset"]),
    ("/api/v1/agents", ["own_agent"]),
    ("/api/v1/eval-runs", ["own_ci_run"]),
    ("/api/v1/eval-runs?dataset_id={dataset}", []),
    ("/api/v1/eval-runs?dataset_id={own_dataset}", ["own_ci_run"]),
    ("/api/v1/eval-runs?status=queued", []),
    ("/api/v1/eval-runs?status=awaiting_results", ["own_ci_run"]),
    ("/api/v1/eval-runs?dataset_id={dataset}&status=awaiting_results", []),
    ("/api/v1/datasets/{own_dataset}/test-cases", ["own_case"]),
    ("/api/v1/datasets/{own_dataset}/drafts", []),
]


async def every_item(http: httpx.AsyncClient, url: str) -> list[dict[str, Any]]:
    """Every item of a list, a page of one at a time (so every cursor is followed too)."""
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100):
        # The filters go in `params` too: httpx replaces a URL's query with `params`.
        query = httpx.URL(url).params.merge({"limit": 1, **({"cursor": cursor} if cursor else {})})
        response = await http.get(url.partition("?")[0], params=query)
        assert response.status_code == 200, f"GET {url}: {shown(response)}"
        items += response.json()["items"]
        cursor = response.json()["next_cursor"]
        if cursor is None:
            return items
    raise AssertionError(f"GET {url} never reached its last page")


def item_id(item: dict[str, Any]) -> str:
    return str(item.get("id") or item["run_id"])


@pytest.mark.parametrize(("url", "own"), LISTS, ids=[url for url, _ in LISTS])
async def test_lists_never_show_another_projects_objects(
    url: str, own: list[str], project_a: Project, project_b: Project
) -> None:
    ids = {**project_a.ids, **project_b.ids}
    items = await every_item(project_b.http, fill(url, ids))
    leaked = [
        name for name, value in project_a.ids.items() if value in json.dumps(items, default=str)
    ]
    assert not leaked, f"LEAK: project B's GET {url} shows project A's {leaked}: {items}"
    assert [item_id(item) for item in items] == [ids[name] for name in own], f"GET {url}"


async def test_the_owner_still_lists_its_own_objects(project_a: Project) -> None:
    """The other side of the lists above: A's lists show A's objects."""
    ids = project_a.ids
    assert [item_id(d) for d in await every_item(project_a.http, "/api/v1/datasets")] == [
        ids["dataset"]
    ]
    assert [item_id(a) for a in await every_item(project_a.http, "/api/v1/agents")] == [
        ids["agent"]
    ]
    runs = await every_item(project_a.http, f"/api/v1/eval-runs?dataset_id={ids['dataset']}")
    assert [item_id(run) for run in runs] == [ids["server_run"], ids["ci_run"]]  # newest first


# ---------------------------------------------------------------------------------------------
# The route that names no object


async def test_grading_preview_answers_both_projects_alike(
    project_a: Project, project_b: Project
) -> None:
    body = {
        "checks": [
            {"type": "tool_called", "tool": "stripe.refund"},
            {"type": "output_contains", "value": "3-5 business days"},
        ],
        **GOOD,
    }
    for_a = await project_a.http.post("/api/v1/grading/preview", json=body)
    for_b = await project_b.http.post("/api/v1/grading/preview", json=body)
    assert for_a.status_code == 200, shown(for_a)
    assert for_b.status_code == 200, shown(for_b)
    assert for_a.json() == for_b.json()
    assert for_b.json()["result"]["pass_fail"] is True


# ---------------------------------------------------------------------------------------------
# Every attempt at once, then A reads its objects back


async def test_after_every_attempt_project_a_finds_everything_as_it_was(
    project_a: Project, project_b: Project, fake_agent: FakeAgentServer
) -> None:
    ids = project_a.ids
    leaks: list[str] = []
    # Deletes last, so that every other attempt still has something to aim at.
    for route in sorted(ROUTES, key=lambda route: route.method == "DELETE"):
        answer = await route.send(project_b.http, ids)
        if answer.status_code != 404:
            leaks.append(f"{route}: {shown(answer)}")
    for case in BODY_IDS:
        answer = await send(
            project_b.http, "POST", case.path, json_body=fill(case.body, {**ids, **project_b.ids})
        )
        if answer.status_code != case.status:
            leaks.append(f"{case}: {shown(answer)}")
    assert not leaks, "LEAK: project B got through:\n" + "\n".join(leaks)

    a = project_a.http
    dataset = (await a.get(f"/api/v1/datasets/{ids['dataset']}")).json()
    assert (dataset["name"], dataset["description"], dataset["data_context"]) == (
        "support", None, {"region": "eu"}
    )  # fmt: skip
    cases = (await a.get(f"/api/v1/datasets/{ids['dataset']}/test-cases")).json()["items"]
    assert [(c["input"], c["revision"]) for c in cases] == [(text, 1) for text in A_INPUTS]
    export = await a.get(f"/api/v1/datasets/{ids['dataset']}/test-cases/export")
    assert len(export.text.splitlines()) == len(A_INPUTS)

    agent = await a.get(f"/api/v1/agents/{ids['agent']}")
    assert agent.status_code == 200, "A's agent is gone"
    assert (agent.json()["name"], agent.json()["url"], agent.json()["header_names"]) == (
        "support bot", fake_agent.url, ["authorization"]
    )  # fmt: skip
    assert fake_agent.requests == [], "project B's attempts reached A's agent"

    ci_run = (await a.get(f"/api/v1/eval-runs/{ids['ci_run']}")).json()
    assert ci_run["status"] == "awaiting_results"
    assert (ci_run["counts"]["done"], ci_run["counts"]["passed"]) == (1, 1)
    results = await all_results(a, ids["ci_run"])
    assert [(r["test_case_id"], r["pass_fail"]) for r in results] == [(ids["case"], True)]
    assert results[0]["actual_output"] == GOOD["actual_output"]

    server_run = (await a.get(f"/api/v1/eval-runs/{ids['server_run']}")).json()
    assert (server_run["status"], server_run["agent_id"]) == ("queued", ids["agent"])
    assert (server_run["counts"]["total"], server_run["counts"]["done"]) == (3, 0)
    assert await all_results(a, ids["server_run"]) == []


@pytest.mark.parametrize("action", ["accept", "reject", "regenerate"])
async def test_a_draft_is_reached_only_through_its_own_dataset(
    action: str, project_a: Project, project_b: Project, fake_agent: FakeAgentServer
) -> None:
    """A's draft named under B's own dataset (or under another of A's) is nowhere."""
    before = await snapshot(project_a, fake_agent)
    ids = {**project_a.ids, **project_b.ids}
    url = fill(f"/api/v1/datasets/{{own_dataset}}/drafts/{{draft}}/{action}", ids)
    assert_problem(await project_b.http.post(url), 404)
    assert_unchanged(before, await snapshot(project_a, fake_agent), f"{action} via B's dataset")


async def test_a_run_cannot_point_at_another_projects_dataset_even_in_sql(
    client: httpx.AsyncClient, database_url: str
) -> None:
    dataset = await create_dataset(client)
    connection = await asyncpg.connect(database_url)
    try:
        other_project = await connection.fetchval(
            "WITH o AS (INSERT INTO organisations (name) VALUES ($1) RETURNING id)"
            " INSERT INTO projects (name, organisation_id) SELECT $1, id FROM o RETURNING id",
            f"other-{uuid.uuid4().hex}",
        )
        with pytest.raises(asyncpg.ForeignKeyViolationError, match="eval_runs_dataset_project"):
            await connection.execute(
                "INSERT INTO eval_runs (id, project_id, dataset_id, mode, status, pass_threshold,"
                " total) VALUES ($1, $2, $3, 'ci', 'awaiting_results', 1, 0)",
                uuid.uuid4(), other_project, uuid.UUID(dataset["id"]),
            )  # fmt: skip
    finally:
        await connection.close()
