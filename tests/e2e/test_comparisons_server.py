"""The no_new_failures gate in server mode, with worker processes calling a fake agent."""

from __future__ import annotations

import httpx

from tests.support.agent_servers import AgentRequest, Handler, ScriptedAgent, Writer, json_answer
from tests.support.api import all_results, dataset_of, register_agent, start_run, wait_final
from tests.support.fake_agent import PROMISE_REPLY, REFUND_REPLY, FakeAgentServer
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
    listed = [item["bucket"] for item in compared["items"]]
    assert listed == ["new_failure", "still_failing", "still_passing"], "every case, in order"
    passing = compared["items"][2]
    assert passing["current"]["pass_all_k"] and passing["baseline"]["pass_all_k"]


def answering_by_trial() -> Handler:
    """An agent that gives "coin" the right answer on odd trials only, and every other input
    the right answer always."""

    async def handle(request: AgentRequest, writer: Writer) -> None:
        asked = request.json()
        right = asked["input"] != "refund coin" or asked["trial"] % 2 == 1
        reply = REFUND_REPLY if right else PROMISE_REPLY
        await json_answer(reply)(request, writer)

    return handle


async def test_five_trials_give_pass_at_k_pass_all_k_and_flaky_cases(
    client: httpx.AsyncClient, workers: WorkerProcesses
) -> None:
    workers.start()
    agent = await ScriptedAgent((answering_by_trial(),)).start()
    try:
        agent_id = await register_agent(client, agent.url)
        dataset_id = await dataset_of(client, ["refund coin", "refund 1", "refund 2"])
        run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, trials=5)
        final = await wait_final(client, run["run_id"])
    finally:
        await agent.close()
    assert final["counts"]["done"] == 15 and final["counts"]["passed"] == 13
    # By case: "coin" passed some trials, not all; the pass rate counts cases.
    assert final["pass_rate"] == 2 / 3 and final["pass_all_k_rate"] == 2 / 3
    assert final["pass_at_k_rate"] == 1.0 and final["flaky_count"] == 1
    assert final["ci_fail_reason"] == (
        "Pass rate 66.7% is below the threshold 100.0%: 1 of 3 graded cases failed."
    )
    results = await all_results(client, run["run_id"])
    coin = [result for result in results if result["actual_output"] == PROMISE_REPLY["output"]]
    assert len(coin) == 2 and all(result["flaky"] for result in coin)
    assert all(r["pass_at_k"] and not r["pass_all_k"] for r in coin)
    steady = [result for result in results if not result["flaky"]]
    assert len(steady) == 10 and all(result["pass_all_k"] for result in steady)
    compared = (await client.get(f"/api/v1/eval-runs/{run['run_id']}/compare")).json()
    assert compared["counts"]["new_case"] == 3, "the dataset's first run: every case is new"
