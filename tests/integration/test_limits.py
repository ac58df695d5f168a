"""Per-key request rates and per-project quotas: a 429 or 409 that says which limit, and why."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import msgspec
import pytest

from agentlasso.config import Settings
from agentlasso.server import create_app
from tests.support.api import create_case, create_dataset, register_agent, start_run
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key
from tests.support.fake_agent import running_fake_agent
from tests.support.servers import serving

Limited = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def limited(settings: Settings, api_key: str) -> Limited:
    """An API process with some limits changed, and a client of it."""

    @asynccontextmanager
    async def api(**limits: Any) -> AsyncIterator[httpx.AsyncClient]:
        app = create_app(msgspec.structs.replace(settings, **limits))
        async with (
            serving(app) as url,
            httpx.AsyncClient(base_url=url, headers={"x-api-key": api_key}, timeout=30) as http,
        ):
            yield http

    return api


async def import_cases(client: httpx.AsyncClient, dataset_id: str, count: int) -> httpx.Response:
    lines = b"".join(msgspec.json.encode({"input": f"q{n}"}) + b"\n" for n in range(count))
    return await client.post(
        f"/api/v1/datasets/{dataset_id}/test-cases/import",
        content=lines,
        headers={"content-type": "application/x-ndjson"},
    )


async def test_a_key_over_its_rate_gets_429_and_another_key_does_not(
    limited: Limited, database_url: str
) -> None:
    async with limited(rate_limit_per_s=1, rate_limit_burst=5) as client:
        answers = [await client.get("/api/v1/datasets") for _ in range(6)]
        other = await client.get(
            "/api/v1/datasets", headers={"x-api-key": await new_project_key(database_url)}
        )
    assert [answer.status_code for answer in answers[:5]] == [200] * 5
    body = assert_problem(answers[5], 429)
    assert answers[5].headers["retry-after"] == "1"
    assert "more than 1 requests a second" in body["detail"]
    assert other.status_code == 200


async def test_server_runs_going_on_are_capped_per_project(limited: Limited) -> None:
    with running_fake_agent() as agent:
        async with limited(quota_active_runs=1) as client:
            agent_id = await register_agent(client, agent.url)
            dataset = await create_dataset(client)
            await import_cases(client, dataset["id"], 2)
            body = {"dataset_id": dataset["id"], "agent_id": agent_id}
            first = await client.post(
                "/api/v1/eval-runs", json=body, headers={"Idempotency-Key": "a"}
            )
            assert first.status_code == 201
            refused = await client.post("/api/v1/eval-runs", json=body)
            # A retry of the first request still finds its run; CI-mode runs do not count.
            again = await client.post(
                "/api/v1/eval-runs", json=body, headers={"Idempotency-Key": "a"}
            )
            ci_mode = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})
            await client.post(f"/api/v1/eval-runs/{first.json()['run_id']}/cancel")
            after_cancel = await client.post("/api/v1/eval-runs", json=body)
    problem = assert_problem(refused, 429)
    assert refused.headers["retry-after"] == "30" and "1 runs going on" in problem["detail"]
    assert again.status_code == 201 and again.json()["run_id"] == first.json()["run_id"]
    assert ci_mode.status_code == 201 and after_cancel.status_code == 201


async def test_a_runs_concurrency_is_capped(limited: Limited) -> None:
    async with limited(quota_run_concurrency=10) as client:
        dataset = await create_dataset(client)
        with running_fake_agent() as agent:
            agent_id = await register_agent(client, agent.url)
            response = await client.post(
                "/api/v1/eval-runs",
                json={"dataset_id": dataset["id"], "agent_id": agent_id, "concurrency": 11},
            )
    assert_problem(response, 422, pointer="/concurrency")


async def test_a_dataset_holds_at_most_its_quota_of_cases(limited: Limited) -> None:
    async with limited(quota_dataset_cases=3) as client:
        dataset = await create_dataset(client)
        assert (await import_cases(client, dataset["id"], 2)).status_code == 201
        too_many = await import_cases(client, dataset["id"], 2)
        one_more = await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "third"}
        )
        full = await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "fourth"}
        )
        listed = (await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")).json()
        await client.delete(f"/api/v1/test-cases/{listed['items'][0]['id']}")
        after_delete = await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "fourth"}
        )
        counted = (await client.get(f"/api/v1/datasets/{dataset['id']}")).json()["case_count"]
    problem = assert_problem(too_many, 409)
    assert "may hold 3 test cases; this would make it 4" in problem["detail"]
    assert one_more.status_code == 201
    assert_problem(full, 409)
    assert after_delete.status_code == 201 and counted == 3


async def open_streams(
    stack: AsyncExitStack, client: httpx.AsyncClient, run_id: str, count: int
) -> list[int]:
    """`count` event streams of the run opened and kept open; the status each was answered."""
    statuses = []
    for _ in range(count):
        stream = client.stream("GET", f"/api/v1/eval-runs/{run_id}/events")
        answer = await stack.enter_async_context(stream)
        statuses.append(answer.status_code)
    return statuses


async def test_a_few_projects_cannot_fill_the_servers_event_streams(
    settings: Settings, database_url: str
) -> None:
    """Five projects each at their cap (the README's ratio: 5,000 in all, 1,000 each) would
    fill the server: each may hold only half of what the others leave free, so a sixth
    project still gets a stream, and a project past its own cap gets a 503."""
    capped = msgspec.structs.replace(settings, max_waiters=10, max_waiters_per_project=2)
    async with serving(create_app(capped)) as url, AsyncExitStack() as stack:
        held: list[list[int]] = []
        for _ in range(6):
            headers = {"x-api-key": await new_project_key(database_url)}
            client = httpx.AsyncClient(base_url=url, headers=headers, timeout=30)
            await stack.enter_async_context(client)
            dataset = await create_dataset(client)
            await import_cases(client, dataset["id"], 1)
            run = await start_run(client, dataset_id=dataset["id"])
            held.append(await open_streams(stack, client, run["run_id"], 3))
    assert held[0] == [200, 200, 503], "a project's own cap holds for event streams"
    assert all(statuses[0] == 200 for statuses in held), held
    served = sum(statuses.count(200) for statuses in held)
    assert served <= 10, held


async def test_waiters_past_the_projects_cap_get_a_503(settings: Settings, api_key: str) -> None:
    capped = msgspec.structs.replace(settings, max_waiters_per_project=2)
    async with (
        serving(create_app(capped)) as url,
        httpx.AsyncClient(base_url=url, headers={"x-api-key": api_key}, timeout=30) as client,
    ):
        dataset = await create_dataset(client)
        await create_case(client, dataset["id"])
        run = await start_run(client, dataset_id=dataset["id"])
        path = f"/api/v1/eval-runs/{run['run_id']}"
        waiting = [asyncio.create_task(client.get(path, params={"wait_s": 3})) for _ in range(2)]
        await asyncio.sleep(0.5)
        refused = await client.get(path, params={"wait_s": 3})
        answered = await asyncio.gather(*waiting)
    body = assert_problem(refused, 503)
    assert refused.headers["retry-after"] == "5" and "requests waiting" in body["detail"]
    assert [answer.status_code for answer in answered] == [200, 200]
