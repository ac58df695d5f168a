"""Server mode with real worker processes: the platform calls a registered agent for every case."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

import asyncpg
import httpx
import msgspec

from tests.support.api import (
    all_results,
    dataset_of,
    register_agent,
    run_now,
    start_run,
    wait_done,
    wait_final,
)
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key
from tests.support.fake_agent import NUL_REPLY, FakeAgentServer, running_fake_agent
from tests.support.processes import WorkerProcesses, free_port
from tests.support.waiting import eventually


async def test_the_happy_path(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(30)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=10)
    assert run["status"] == "queued" and run["total"] == 30 and run["mode"] == "server"

    final = await wait_final(client, run["run_id"])
    assert final["status"] == "completed", final
    assert final["ci_pass"] is True and final["pass_rate"] == 1.0
    assert final["counts"]["done"] == 30 and final["counts"]["passed"] == 30
    assert len(fake_agent.requests) == 30
    request = fake_agent.requests[0]
    assert request["source"] == "agentlasso-test" and request["run_id"] == run["run_id"]
    assert request["context"] == {"region": "eu"} and request["trial"] == 1
    assert all(h.get("authorization") == "Bearer s3cret" for h in fake_agent.headers_seen)
    results = await all_results(client, run["run_id"])
    assert len(results) == 30
    call = results[0]["agent_call"]
    assert call["error"] is None and len(call["attempts"]) == 1
    assert call["attempts"][0]["status"] == 200 and call["latency_ms"] >= 0


async def test_agent_faults_are_each_cases_failure_with_the_reason(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    workers.start()
    # 3 s: room for a new worker's first connections on a loaded machine; the slow case
    # still sleeps 5 s, so it still times out.
    agent_id = await register_agent(client, fake_agent.url, timeout_s=3)
    inputs = [
        "refund ok", "flaky then fine", "ratelimit then fine", "redirect me", "huge answer",
        "garbage answer", "notools here", "slow answer", "crash now",
    ]  # fmt: skip
    dataset_id = await dataset_of(client, inputs)
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
    final = await wait_final(client, run["run_id"])
    assert final["status"] == "completed"
    cases = (await client.get(f"/api/v1/datasets/{dataset_id}/test-cases")).json()["items"]
    input_of = {case["id"]: case["input"] for case in cases}
    by_input = {input_of[r["test_case_id"]]: r for r in await all_results(client, run["run_id"])}
    assert sorted(by_input) == sorted(inputs)
    assert by_input["refund ok"]["pass_fail"] is True

    flaky = by_input["flaky then fine"]["agent_call"]
    assert [a["status"] for a in flaky["attempts"]] == [503, 503, 200], flaky
    assert by_input["flaky then fine"]["pass_fail"] is True

    limited = by_input["ratelimit then fine"]["agent_call"]
    assert [a["status"] for a in limited["attempts"]] == [429, 200]
    assert limited["latency_ms"] >= 1000, "Retry-After: 1 was honoured"

    def error_of(text: str) -> str:
        result = by_input[text]
        assert result["pass_fail"] is False and result["agent_call"]["error"]
        return str(result["agent_call"]["error"])

    assert "302" in error_of("redirect me") and "redirect" in error_of("redirect me")
    assert len(by_input["redirect me"]["agent_call"]["attempts"]) == 1, "a 3xx is not retried"
    assert "limit" in error_of("huge answer")
    assert "JSON" in error_of("garbage answer")
    assert "timed out" in error_of("slow answer")
    assert "500" in error_of("crash now")
    details = [c["detail"] for c in by_input["slow answer"]["check_results"]]
    assert all("timed out" in detail for detail in details)

    notools = by_input["notools here"]
    assert "actual_tool_calls" not in notools, "not reported is left out, not shown as []"
    assert "not reported" in notools["check_results"][0]["detail"]
    assert final["counts"]["errored"] == 5


async def test_connection_refused_is_reported_after_retries(
    client: httpx.AsyncClient, workers: WorkerProcesses
) -> None:
    workers.start()
    agent_id = await register_agent(client, f"http://127.0.0.1:{free_port()}/agent", timeout_s=2)
    run = await start_run(
        client, dataset_id=await dataset_of(client, ["refund"]), agent_id=agent_id
    )
    final = await wait_final(client, run["run_id"])
    (result,) = await all_results(client, run["run_id"])
    assert final["status"] == "completed" and final["ci_pass"] is False
    assert len(result["agent_call"]["attempts"]) == 3
    assert "connect" in result["agent_call"]["error"]


async def test_a_worker_killed_mid_run_loses_and_doubles_nothing(
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    fake_agent.delay_s = 0.02
    pids = {workers.start(concurrency=50).pid, workers.start(concurrency=50).pid}
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(2000)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=100)
    connection = await asyncpg.connect(database_url)
    try:
        await wait_done(client, run["run_id"], 300)
        # Kill a worker that holds a chunk right now (worker ids are host:pid:nonce).
        holder = await connection.fetchval(
            "SELECT worker_id FROM run_chunks WHERE run_id = $1 AND state = 'running' LIMIT 1",
            run["run_id"],
        )
        doomed = int(holder.split(":")[1])
        assert doomed in pids
        os.kill(doomed, signal.SIGKILL)

        final = await wait_final(client, run["run_id"], wait_s=120)
        rows = await connection.fetchrow(
            "SELECT count(*) AS n, count(DISTINCT test_case_id) AS cases,"
            " count(*) FILTER (WHERE pass_fail) AS passed FROM case_results WHERE run_id = $1",
            run["run_id"],
        )
        reissued = await connection.fetchval(
            "SELECT count(*) FROM run_chunks WHERE run_id = $1 AND attempt > 1", run["run_id"]
        )
    finally:
        await connection.close()
    assert final["status"] == "completed", final
    assert final["counts"]["done"] == 2000 and final["counts"]["passed"] == 2000
    assert (rows["n"], rows["cases"], rows["passed"]) == (2000, 2000, 2000)
    assert reissued >= 1, "the dead worker's chunk was found again and redone"


async def test_cancel_stops_the_run_and_keeps_its_results(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    fake_agent.delay_s = 0.2
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(500)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=10)
    await wait_done(client, run["run_id"], 20)
    cancelled_at = time.monotonic()
    answer = (await client.post(f"/api/v1/eval-runs/{run['run_id']}/cancel")).json()
    assert answer["status"] == "cancelled"
    await asyncio.sleep(1.5)
    calls_then = len(fake_agent.requests)
    await asyncio.sleep(3)
    assert len(fake_agent.requests) == calls_then, "no agent call starts after the cancel"
    last_call = max(arrived for arrived, _ in fake_agent.arrivals)
    assert last_call - cancelled_at < 1.5, "calls stop within a second or so (the issue: 5 s)"
    final = (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()
    assert final["status"] == "cancelled" and final["ci_pass"] is False
    stored = await all_results(client, run["run_id"])
    assert 20 <= len(stored) == final["counts"]["done"] < 500


async def test_trials_make_one_result_each(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund a", "refund b", "promise c"])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, trials=3)
    assert run["total"] == 9
    final = await wait_final(client, run["run_id"])
    assert final["counts"]["done"] == 9 and final["counts"]["passed"] == 6
    results = await all_results(client, run["run_id"])
    assert sorted(r["trial"] for r in results) == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert final["pass_rate"] == 6 / 9


async def test_idempotent_post_starts_one_run(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    body = {"dataset_id": await dataset_of(client, ["refund"] * 5), "agent_id": agent_id}
    headers = {"Idempotency-Key": "deploy-77"}
    first = await client.post("/api/v1/eval-runs", json=body, headers=headers)
    again = await client.post("/api/v1/eval-runs", json=body, headers=headers)
    assert first.json()["run_id"] == again.json()["run_id"]
    await wait_final(client, first.json()["run_id"])
    await asyncio.sleep(0.5)
    assert len(fake_agent.requests) == 5


async def test_long_poll_wakes_on_completion(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    fake_agent.delay_s = 0.5
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    run = await start_run(
        client, dataset_id=await dataset_of(client, ["refund"] * 4), agent_id=agent_id
    )
    started = time.monotonic()
    polled = await client.get(f"/api/v1/eval-runs/{run['run_id']}", params={"wait_s": 60})
    waited = time.monotonic() - started
    assert polled.json()["status"] == "completed"
    assert waited < 30, "answered on completion, not at the end of the wait"
    too_long = await client.get(f"/api/v1/eval-runs/{run['run_id']}", params={"wait_s": 121})
    assert_problem(too_long, 422, parameter="wait_s")


async def test_a_long_poll_on_an_unfinished_run_answers_after_wait_s(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer
) -> None:
    agent_id = await register_agent(client, fake_agent.url)
    run = await start_run(
        client, dataset_id=await dataset_of(client, ["refund"]), agent_id=agent_id
    )
    started = time.monotonic()
    polled = await client.get(f"/api/v1/eval-runs/{run['run_id']}", params={"wait_s": 1})
    assert polled.json()["status"] == "queued"  # no worker in this test
    assert 0.9 <= time.monotonic() - started < 10


async def test_server_sent_events_end_with_the_final_event(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    fake_agent.delay_s = 0.05
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    run = await start_run(
        client,
        dataset_id=await dataset_of(client, [f"refund {n}" for n in range(200)]),
        agent_id=agent_id,
        concurrency=20,
    )
    events: list[tuple[str, dict[str, Any]]] = []
    async with client.stream("GET", f"/api/v1/eval-runs/{run['run_id']}/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        kind = ""
        async for line in stream.aiter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append((kind, msgspec.json.decode(line.split(":", 1)[1])))
    assert events[-1][0] == "final"
    assert events[-1][1]["status"] == "completed" and events[-1][1]["counts"]["done"] == 200
    assert all(kind == "progress" for kind, _ in events[:-1])
    done = [body["counts"]["done"] for _, body in events]
    assert done == sorted(done)


async def test_an_agents_max_concurrency_holds_across_workers(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    fake_agent.delay_s = 0.1
    workers.start()
    workers.start()
    agent_id = await register_agent(client, fake_agent.url, max_concurrency=3)
    first = await dataset_of(client, [f"refund {n}" for n in range(40)])
    second = await dataset_of(client, [f"refund {n}" for n in range(40)])
    runs = [
        await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=20)
        for dataset_id in (first, second)
    ]
    finals = [await wait_final(client, run["run_id"]) for run in runs]
    assert [final["counts"]["done"] for final in finals] == [40, 40]
    assert fake_agent.most_in_flight == 3, "two runs, two workers, never more than 3 at once"


async def test_a_reply_holding_nul_is_stored_once_and_graded(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    # Before: PostgreSQL refused the reply, the chunk was retried five times (calling the agent
    # each time) and the run failed.
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["nul reply please"])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
    final = await wait_final(client, run["run_id"])
    assert final["status"] == "completed" and final["ci_pass"] is True, final
    assert len(fake_agent.requests) == 1
    [result] = await all_results(client, run["run_id"])
    assert result["actual_output"] == NUL_REPLY["output"]
    assert result["actual_tool_calls"] == NUL_REPLY["tool_calls"]


async def test_max_concurrency_holds_for_calls_longer_than_a_lease(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    # Before: a lease lasted a fixed time (125 s by default, shorter than a slow agent's
    # timeout times its attempts), so a call outliving it freed its slot for another call.
    # Here leases last 1 s and each call 2.5 s: only renewing them keeps the limit.
    fake_agent.delay_s = 2.5
    for _ in range(2):
        workers.start(extra_env={"AGENTLASSO_SLOT_LEASE_S": "1"})
    agent_id = await register_agent(client, fake_agent.url, max_concurrency=2, timeout_s=10)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(6)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=6)
    final = await wait_final(client, run["run_id"])
    assert final["counts"]["done"] == 6 and final["status"] == "completed"
    assert fake_agent.most_in_flight == 2


async def test_calls_a_minute_to_one_agent_host_are_paced_per_project(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    # 600 a minute is 10 a second, with a chunk's worth (50) saved up: 110 calls take 6 s.
    workers.start(extra_env={"AGENTLASSO_QUOTA_AGENT_HOST_CALLS_PER_MIN": "600"})
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(110)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=100)
    final = await wait_final(client, run["run_id"])
    assert final["status"] == "completed" and final["counts"]["done"] == 110
    arrived = sorted(at for at, _ in fake_agent.arrivals)
    assert arrived[-1] - arrived[0] >= 5.0, "60 calls past the first 50 came at 10 a second"


async def test_a_tarpit_agent_of_one_project_leaves_slots_for_another(
    client: httpx.AsyncClient,
    workers: WorkerProcesses,
    base_url: str,
    database_url: str,
) -> None:
    # Before: one project's lanes could take every call slot of a worker; with an agent that
    # hangs each call, another project's run waited for those calls to time out.
    workers.start(concurrency=10)  # a project may hold 80% of them: 8
    with running_fake_agent() as tarpit, running_fake_agent() as fast:
        tarpit.delay_s = 20
        tarpit_id = await register_agent(client, tarpit.url, timeout_s=60)
        hog = await start_run(
            client,
            dataset_id=await dataset_of(client, [f"refund {n}" for n in range(40)]),
            agent_id=tarpit_id,
            concurrency=40,
        )

        async def tarpit_full() -> bool:
            return tarpit.calls_in_flight >= 8

        await eventually(tarpit_full, 20, what="the tarpit holding its share of slots")
        other_key = await new_project_key(database_url)
        async with httpx.AsyncClient(
            base_url=base_url, headers={"x-api-key": other_key}, timeout=60
        ) as other:
            fast_id = await register_agent(other, fast.url)
            small = await start_run(
                other,
                dataset_id=await dataset_of(other, [f"refund {n}" for n in range(5)]),
                agent_id=fast_id,
            )
            final = await wait_final(other, small["run_id"], wait_s=15)
        hog_now = await run_now(client, hog["run_id"])
        await client.post(f"/api/v1/eval-runs/{hog['run_id']}/cancel")
    assert final["status"] == "completed" and final["counts"]["passed"] == 5
    assert hog_now["status"] == "running" and hog_now["counts"]["done"] == 0
    assert tarpit.most_in_flight == 8


async def test_a_runs_concurrency_bounds_its_calls_in_flight(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    # 120 is no multiple of a chunk's 50 calls; the lanes' next chunks start while the
    # chunks before them are still being graded and stored.
    fake_agent.delay_s = 0.2
    started = {workers.start().pid, workers.start().pid}
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(1200)])

    async def both_live() -> bool:
        listed = (await client.get("/api/v1/workers")).json()["items"]
        return started <= {worker["pid"] for worker in listed}

    # A worker of 100 gives one project 80 calls at once: the 120 need both workers.
    await eventually(both_live, 30, what="both workers live")
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=120)
    final = await wait_final(client, run["run_id"], wait_s=60)
    assert final["status"] == "completed" and final["counts"]["done"] == 1200
    assert 100 <= fake_agent.most_in_flight <= 120, fake_agent.most_in_flight
