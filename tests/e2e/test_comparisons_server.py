"""The no_new_failures gate in server mode, with worker processes calling a fake agent."""

from __future__ import annotations

import httpx

from tests.support.api import dataset_of, register_agent, start_run, wait_final
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import WorkerProcesses


async def test_a_server_run_fails_its_gate_only_on_what_passed_before(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund 1", "promise 2", "refund 3"])
    first = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, trials=2)
    assert (await wait_final(client, first["run_id"]))["counts"]["passed"] == 4

    gated = {"dataset_id": dataset_id, "agent_id": agent_id, "trials": 2, "gate": "no_new_failures"}
    second = await start_run(client, **gated)
    assert second["baseline_run_id"] == first["run_id"]
    final = await wait_final(client, second["run_id"])
    # "promise 2" fails as it did: below the threshold, but nothing new broke.
    assert final["pass_rate"] < final["pass_threshold"]
    assert final["ci_pass"] is True and final["new_failures"] == 0

    cases = (await client.get(f"/api/v1/datasets/{dataset_id}/test-cases")).json()["items"]
    stricter = next(case for case in cases if case["input"] == "refund 3")
    checks = [*stricter["checks"], {"type": "output_contains", "value": "within the hour"}]
    await client.patch(f"/api/v1/test-cases/{stricter['id']}", json={"checks": checks})
    third = await start_run(client, **gated)
    assert third["baseline_run_id"] == second["run_id"], "the newest completed run that passed"
    final = await wait_final(client, third["run_id"])
    assert final["ci_pass"] is False and final["new_failures"] == 1
    compared = (await client.get(f"/api/v1/eval-runs/{third['run_id']}/compare")).json()
    first_item = compared["items"][0]
    assert (first_item["test_case_id"], first_item["bucket"]) == (stricter["id"], "new_failure")
    assert first_item["revision_changed"] is True, "a changed check, not a changed agent"
    assert compared["counts"]["still_failing"] == 1 and compared["counts"]["still_passing"] == 1
