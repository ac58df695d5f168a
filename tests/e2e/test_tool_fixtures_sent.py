"""A case's tool fixtures reach the agent (contract section 14): in the request body for the
agentlasso protocol, from the platform's workers and from `agentlasso ci`, and as A2A message
metadata (the A2A SDK's own server reads them back)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.test_ci_command import run_ci
from tests.support.a2a_agent import RunningA2aAgent, running_a2a_agent
from tests.support.api import create_dataset, register_agent, start_run, wait_final
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import WorkerProcesses

FIXTURES = {"orders.lookup": [{"arguments": {"order": 1234}, "result": {"status": "paid"}}]}


@pytest.fixture
def a2a_agent() -> Iterator[RunningA2aAgent]:
    with running_a2a_agent() as agent:
        yield agent


async def dataset_with_fixtures(client: httpx.AsyncClient, text: str, checks: list) -> str:  # type: ignore[type-arg]
    dataset = await create_dataset(client)
    case = {"input": text, "checks": checks, "tool_fixtures": FIXTURES}
    response = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
    assert response.status_code == 201, response.text
    return str(dataset["id"])


async def test_server_mode_sends_the_fixtures_in_the_body(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    checks = [{"type": "tool_called", "tool": "stripe.refund"}]
    dataset_id = await dataset_with_fixtures(client, "refund 1", checks)

    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
    assert (await wait_final(client, run["run_id"]))["status"] == "completed"

    [request] = [r for r in fake_agent.requests if r.get("run_id") == run["run_id"]]
    assert request["tool_fixtures"] == FIXTURES


async def test_an_a2a_agent_gets_the_fixtures_as_message_metadata(
    client: httpx.AsyncClient, a2a_agent: RunningA2aAgent, workers: WorkerProcesses
) -> None:
    workers.start()
    registered = await client.post(
        "/api/v1/agents", json={"name": "a2a", "url": a2a_agent.base_url, "protocol": "a2a"}
    )
    assert registered.status_code == 201, registered.text
    checks = [{"type": "output_contains", "value": "orders.lookup"}]
    dataset_id = await dataset_with_fixtures(client, "fixtures please", checks)

    run = await start_run(client, dataset_id=dataset_id, agent_id=registered.json()["id"])
    final = await wait_final(client, run["run_id"])

    assert final["ci_pass"] is True, final
    assert json.loads(json.dumps(a2a_agent.executor.metadata[-1]["tool_fixtures"])) == {
        "orders.lookup": [{"arguments": {"order": 1234.0}, "result": {"status": "paid"}}]
    }


async def test_agentlasso_ci_sends_the_fixtures_in_the_body(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer
) -> None:
    async with httpx.AsyncClient(base_url=api_process_url, headers={"x-api-key": api_key}) as c:
        dataset_id = await dataset_with_fixtures(
            c, "refund 2", [{"type": "tool_called", "tool": "stripe.refund"}]
        )

    done = run_ci(api_process_url, api_key, "--dataset", dataset_id, "--agent-url", fake_agent.url)

    assert done.returncode == 0, done.stdout + done.stderr
    assert fake_agent.requests[-1]["tool_fixtures"] == FIXTURES
