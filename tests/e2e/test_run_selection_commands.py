"""`agentlasso run` and `agentlasso ci` with `--tag` and `--dataset-version`: real workers call
the agent for exactly the frozen, tagged revisions; the CI client calls it for exactly those."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.e2e.test_ci_command import REFUND_CHECKS, run_ci
from tests.e2e.test_run_command import agentlasso_run
from tests.support.api import create_dataset, register_agent
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import WorkerProcesses


async def tagged_cases(
    client: httpx.AsyncClient, cases: dict[str, list[str]]
) -> tuple[str, dict[str, str]]:
    """A dataset with a case per input and its tags (the refund checks); its id and case ids."""
    dataset = await create_dataset(client, name="tagged e2e")
    ids = {}
    for text, tags in cases.items():
        body: dict[str, Any] = {"input": text, "checks": REFUND_CHECKS, "tags": tags}
        created = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=body)
        assert created.status_code == 201, created.text
        ids[text] = created.json()["id"]
    return dataset["id"], ids


async def test_run_wait_runs_the_frozen_tagged_revisions_with_real_workers(
    client: httpx.AsyncClient,
    base_url: str,
    api_key: str,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id, ids = await tagged_cases(
        client, {"refund 1": ["smoke"], "promise 2": [], "refund 3": ["smoke", "eu"]}
    )
    frozen = await client.post(f"/api/v1/datasets/{dataset_id}/versions", json={"name": "v1"})
    assert frozen.status_code == 201, frozen.text
    # After the freeze, the first case is edited into one the agent fails, and the third is
    # deleted: the version still runs them as they were.
    edit = {"input": "promise 1, edited"}
    assert (await client.patch(f"/api/v1/test-cases/{ids['refund 1']}", json=edit)).is_success
    assert (await client.delete(f"/api/v1/test-cases/{ids['refund 3']}")).is_success

    done = await agentlasso_run(
        base_url, api_key, "--dataset", dataset_id, "--agent", agent_id, "--wait",
        "--dataset-version", "v1", "--tag", "smoke", "--tag", "nightly",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Cases: version v1 of the dataset (its frozen revisions); only the cases tagged " \
        "smoke, nightly." in done.stdout  # fmt: skip
    assert "2/2 done, 2 passed, 0 failed" in done.stdout
    assert sorted(request["input"] for request in fake_agent.requests) == ["refund 1", "refund 3"]

    # The live dataset's smoke case is the edited one, which fails.
    fake_agent.requests.clear()
    live = await agentlasso_run(
        base_url, api_key, "--dataset", dataset_id, "--agent", agent_id, "--wait",
        "--tag", "smoke",
    )  # fmt: skip
    assert live.returncode == 1, live.stdout + live.stderr
    assert [request["input"] for request in fake_agent.requests] == ["promise 1, edited"]

    unknown = await agentlasso_run(
        base_url, api_key, "--dataset", dataset_id, "--agent", agent_id, "--tag", "nope"
    )
    assert unknown.returncode == 2, unknown.stdout + unknown.stderr
    assert "No case in the dataset has any of the tags nope" in unknown.stdout + unknown.stderr


async def test_ci_calls_the_agent_only_for_the_versions_tagged_cases(
    client: httpx.AsyncClient, base_url: str, api_key: str, fake_agent: FakeAgentServer
) -> None:
    dataset_id, ids = await tagged_cases(
        client, {"refund 1": ["smoke"], "refund 2": [], "refund 3": ["smoke"]}
    )
    frozen = await client.post(f"/api/v1/datasets/{dataset_id}/versions", json={"name": "rc"})
    assert frozen.status_code == 201, frozen.text
    edit = {"input": "promise 3, edited"}
    assert (await client.patch(f"/api/v1/test-cases/{ids['refund 3']}", json=edit)).is_success

    done = await asyncio.to_thread(
        run_ci, base_url, api_key, "--dataset", dataset_id, "--agent-url", fake_agent.url,
        "--tag", "smoke", "--dataset-version", "rc",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Run " in done.stdout and ": 2 test cases" in done.stdout
    assert sorted(request["input"] for request in fake_agent.requests) == ["refund 1", "refund 3"]
