"""The worker pool grows and shrinks mid-run: a worker added takes lanes within seconds, a
worker stopped hands its chunks back, and every case is answered exactly once."""

from __future__ import annotations

import asyncio
import re
import signal
import time
from collections import Counter
from typing import Any

import asyncpg
import httpx

from tests.support.api import (
    all_results,
    dataset_of,
    register_agent,
    start_run,
    wait_done,
    wait_final,
)
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import WorkerProcesses, free_port
from tests.support.waiting import eventually


async def chunks_held_by(client: httpx.AsyncClient, pid: int) -> int | None:
    """How many of the project's chunks the worker with this pid holds; None if not listed."""
    workers = (await client.get("/api/v1/workers")).json()["items"]
    return next((int(w["chunks_held"]) for w in workers if w["pid"] == pid), None)


async def is_listed(client: httpx.AsyncClient, pid: int) -> bool:
    return await chunks_held_by(client, pid) is not None


async def run_of(
    client: httpx.AsyncClient, agent_url: str, cases: int, concurrency: int
) -> dict[str, Any]:
    """A run just started: `cases` cases against the agent at this URL."""
    agent_id = await register_agent(client, agent_url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(cases)])
    return await start_run(
        client, dataset_id=dataset_id, agent_id=agent_id, concurrency=concurrency
    )


async def reissued(metrics_port: int) -> dict[str, float]:
    """A worker's chunks re-issued so far, by reason, from its /metrics."""
    async with httpx.AsyncClient() as probe:
        scrape = (await probe.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
    found = re.findall(r'^agentlasso_chunks_reissued_total\{reason="(\w+)"\} (\S+)$', scrape, re.M)
    return {reason: float(value) for reason, value in found}


def answered_once_each(results: list[dict[str, object]], cases: int) -> bool:
    """One result per case, none twice."""
    counts = Counter((r["test_case_id"], r["trial"]) for r in results)
    return len(counts) == cases and set(counts.values()) == {1}


async def test_a_worker_added_mid_run_takes_lanes_within_five_seconds(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    fake_agent.delay_s = 0.5
    first = workers.start(concurrency=200)
    cases = 3000
    run = await run_of(client, fake_agent.url, cases, 200)
    assert await eventually(lambda: chunks_held_by(client, first.pid), timeout_s=20)

    second = workers.start(concurrency=200)
    started = time.monotonic()
    await eventually(
        lambda: is_listed(client, second.pid), timeout_s=30, what="the new worker listed"
    )
    listed_after_s = time.monotonic() - started
    await eventually(lambda: chunks_held_by(client, second.pid), timeout_s=15, every_s=0.1)
    took_work_after_s = time.monotonic() - started
    # From the moment it answers as a live worker (start-up itself is imports and a pool).
    assert took_work_after_s - listed_after_s < 5, (listed_after_s, took_work_after_s)

    final = await wait_final(client, run["run_id"], wait_s=120)
    assert final["status"] == "completed" and final["counts"]["done"] == cases
    assert answered_once_each(await all_results(client, run["run_id"]), cases)


async def test_a_worker_stopped_mid_run_leaves_every_case_answered_exactly_once(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    fake_agent.delay_s = 0.3
    port = free_port()
    first = workers.start(concurrency=100)
    second = workers.start(concurrency=100, extra_env={"AGENTLASSO_METRICS_PORT": str(port)})
    cases = 3000
    run = await run_of(client, fake_agent.url, cases, 200)
    # Both hold lanes, past their first chunks; then one is told to stop in the middle of one.
    assert await eventually(lambda: chunks_held_by(client, first.pid), timeout_s=20)
    assert await eventually(lambda: chunks_held_by(client, second.pid), timeout_s=20)
    await wait_done(client, run["run_id"], 800)
    assert await chunks_held_by(client, first.pid)
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=30)
    assert await chunks_held_by(client, first.pid) is None, "a stopped worker is not listed"

    final = await wait_final(client, run["run_id"], wait_s=120)
    assert final["status"] == "completed" and final["counts"]["done"] == cases
    assert answered_once_each(await all_results(client, run["run_id"]), cases)
    # What it handed back was queued at once, not found later by the reaper as lost.
    assert await reissued(port) == {"stale_worker": 0.0, "lost_job": 0.0}


async def test_a_worker_stopped_while_storing_stores_the_answers_it_has(
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    # A lane stores a chunk while the next one's calls are in flight. Hold the run's tallies
    # (a store's last write; the run's row no longer holds stores up) so that stores wait, let
    # the next calls finish, then stop the worker: the answers it holds are stored before it
    # exits, and nothing is left for the reaper to redo.
    fake_agent.delay_s = 0.2
    leaving = workers.start(concurrency=100)
    cases = 1000
    run = await run_of(client, fake_agent.url, cases, 100)
    await wait_done(client, run["run_id"], 100)
    holder = await asyncpg.connect(database_url)
    try:
        async with holder.transaction():
            await holder.execute("LOCK TABLE run_tallies IN SHARE MODE")
            await asyncio.sleep(1)  # every lane's next calls are answered meanwhile
            leaving.send_signal(signal.SIGTERM)
            await asyncio.sleep(1)
            assert leaving.poll() is None, "it waits for its stores rather than exit"
        exit_code = await asyncio.to_thread(leaving.wait, 30)
    finally:
        await holder.close()
    assert exit_code == 0

    port = free_port()
    workers.start(concurrency=100, extra_env={"AGENTLASSO_METRICS_PORT": str(port)})
    final = await wait_final(client, run["run_id"], wait_s=120)
    assert final["status"] == "completed" and final["counts"]["done"] == cases
    assert answered_once_each(await all_results(client, run["run_id"]), cases)
    assert (await reissued(port))["stale_worker"] == 0


async def test_a_worker_stopped_before_its_lane_starts_hands_the_chunk_back_at_once(
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    # The lane claims its first chunk, then waits to mark the run running (its row is held
    # here); stopped there, the worker gives the chunk back instead of leaving it running.
    run = await run_of(client, fake_agent.url, 40, 40)
    holder = await asyncpg.connect(database_url)
    try:
        async with holder.transaction():
            await holder.execute("SELECT 1 FROM eval_runs WHERE id = $1 FOR UPDATE", run["run_id"])
            leaving = workers.start()

            async def claimed() -> bool:
                state = await holder.fetchval(
                    "SELECT state FROM run_chunks WHERE run_id = $1", run["run_id"]
                )
                return bool(state == "running")

            await eventually(claimed, 30, what="the lane claiming its chunk")
            leaving.send_signal(signal.SIGTERM)
            exit_code = await asyncio.to_thread(leaving.wait, 30)
        state = await holder.fetchval(
            "SELECT state FROM run_chunks WHERE run_id = $1", run["run_id"]
        )
    finally:
        await holder.close()
    assert exit_code == 0
    assert state == "queued", "handed back, for the next worker to take at once"

    port = free_port()
    workers.start(extra_env={"AGENTLASSO_METRICS_PORT": str(port)})
    final = await wait_final(client, run["run_id"], wait_s=60)
    assert final["status"] == "completed" and final["counts"]["done"] == 40
    assert (await reissued(port))["stale_worker"] == 0
