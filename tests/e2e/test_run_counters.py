"""A run's counters have no hot row (issue 31): stores go on while the run's row is held, counts
are exact over workers and chunks stored twice, and a reader never sees them go backwards nor a
gate decided before the last result."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from typing import Any

import asyncpg
import httpx

from tests.support.api import all_results, dataset_of, register_agent, start_run, wait_done
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import WorkerProcesses
from tests.support.waiting import eventually

FINAL = ("completed", "cancelled", "failed")
COUNTED = ("done", "graded", "passed", "failed", "not_graded", "errored")


async def count_of(database_url: str, rows: str, run_id: str) -> int:
    """How many rows of a run a query counts (`rows`: its FROM and WHERE), committed now."""
    connection = await asyncpg.connect(database_url)
    try:
        count: int = await connection.fetchval(f"SELECT count(*) FROM {rows}", run_id)
        return count
    finally:
        await connection.close()


async def stored_results(database_url: str, run_id: str) -> int:
    return await count_of(database_url, "case_results WHERE run_id = $1", run_id)


async def test_results_are_stored_while_another_transaction_holds_the_run_row(
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    # Every store used to update the run's row and lock it FOR KEY SHARE through each result's
    # foreign key: while anything held the row, no chunk of the run could be stored.
    fake_agent.delay_s = 0.1
    workers.start(concurrency=100)
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(1500)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=100)
    await wait_done(client, run["run_id"], 100)

    holder = await asyncpg.connect(database_url)
    try:
        async with holder.transaction():
            await holder.execute("SELECT 1 FROM eval_runs WHERE id = $1 FOR UPDATE", run["run_id"])
            before = await stored_results(database_url, run["run_id"])
            await asyncio.sleep(2)
            during = await stored_results(database_url, run["run_id"])
    finally:
        await holder.close()
    assert during - before >= 100, f"{during - before} results stored in 2 s with the row held"

    final = (await client.get(f"/api/v1/eval-runs/{run['run_id']}", params={"wait_s": 60})).json()
    assert final["status"] == "completed" and final["counts"]["done"] == 1500


class Observer:
    """Reads a run over and over, as its page, long-polls and CI clients do, and keeps what
    no reader may ever see (a reader of its own: two readers may see each other's reads
    out of order, one never sees its own go back)."""

    def __init__(self, client: httpx.AsyncClient, run_id: str) -> None:
        self.client = client
        self.run_id = run_id
        self.reads = 0
        self.wrong: list[str] = []
        self.last: dict[str, int] = {}

    def check(self, run: dict[str, Any]) -> None:
        counts, total = run["counts"], run["counts"]["total"]
        self.reads += 1
        for name in COUNTED:
            if counts[name] < self.last.get(name, 0):
                self.wrong.append(f"{name} went from {self.last[name]} to {counts[name]}")
            self.last[name] = counts[name]
        if counts["done"] == total and run["status"] not in ("grading", *FINAL):
            self.wrong.append(f"every result in, and the run still {run['status']}")
        if run["ci_pass"] and (run["status"] != "completed" or counts["done"] < total):
            self.wrong.append(f"a pass with {counts['done']} of {total} in, {run['status']}")
        if run["status"] == "completed" and counts["done"] != total:
            self.wrong.append(f"completed with {counts['done']} of {total}")

    async def poll(self) -> None:
        """Read the run until it ends."""
        while True:
            run = (await self.client.get(f"/api/v1/eval-runs/{self.run_id}")).json()
            self.check(run)
            if run["status"] in FINAL:
                return
            await asyncio.sleep(0.02)

    async def long_poll(self) -> None:
        """Follow the run by long-polls, woken by the workers' notifications."""
        while True:
            url = f"/api/v1/eval-runs/{self.run_id}"
            run = (await self.client.get(url, params={"wait_s": 1})).json()
            self.check(run)
            if run["status"] in FINAL:
                return


async def test_counts_are_exact_over_workers_and_a_chunk_stored_twice(
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    # The stopped worker's chunks are taken from it as stale and done by the other; then it
    # goes on and stores the same chunks again, beside the other's stores: counted once.
    fake_agent.delay_s = 0.3
    cases = 2500
    stopped = workers.start(concurrency=100)
    workers.start(concurrency=100)
    agent_id = await register_agent(client, fake_agent.url)
    inputs = [f"refund {n}" if n % 3 else f"promise {n}" for n in range(cases)]
    dataset_id = await dataset_of(client, inputs)
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=200)
    polling, waiting = Observer(client, run["run_id"]), Observer(client, run["run_id"])
    following = [asyncio.create_task(polling.poll()), asyncio.create_task(waiting.long_poll())]
    await wait_done(client, run["run_id"], 200)

    stopped.send_signal(signal.SIGSTOP)
    try:
        await eventually(lambda: reissued_chunks(database_url, run["run_id"]), timeout_s=30)
    finally:
        stopped.send_signal(signal.SIGCONT)
    await asyncio.wait_for(asyncio.gather(*following), timeout=120)

    results = await all_results(client, run["run_id"])
    final = (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()
    assert polling.wrong == [] and polling.reads > 20
    assert waiting.wrong == [] and waiting.reads > 5
    assert Counter((r["test_case_id"], r["trial"]) for r in results).most_common(1)[0][1] == 1
    outcomes = Counter(r["outcome"] for r in results)
    assert final["status"] == "completed"
    assert final["counts"]["done"] == len(results) == cases
    assert final["counts"]["passed"] == outcomes["passed"] > 0
    assert final["counts"]["failed"] == outcomes["failed"] > 0
    assert final["pass_rate"] == outcomes["passed"] / (outcomes["passed"] + outcomes["failed"])
    # Summed counters keep their JSON types (a sum of bigints is numeric in PostgreSQL).
    assert all(type(value) is int for value in final["counts"].values())
    assert all(type(final["judge"][name]) is int for name in ("calls", "input_tokens"))


async def reissued_chunks(database_url: str, run_id: str) -> int:
    """Chunks of the run given out again after their worker stopped beating."""
    return await count_of(database_url, "run_chunks WHERE run_id = $1 AND attempt > 1", run_id)


async def test_a_run_deleted_while_its_chunks_are_stored_leaves_no_result_behind(
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    # Results have no foreign key to their run: a run deleted (with its dataset or project)
    # deletes them itself, after waiting for any store holding one of its chunks, and a store
    # that comes after finds its chunk gone and stores nothing.
    fake_agent.delay_s = 0.05
    workers.start(concurrency=200)
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(3000)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=200)
    await wait_done(client, run["run_id"], 200)

    deleter = await asyncpg.connect(database_url)
    try:
        async with deleter.transaction():
            await deleter.execute("DELETE FROM eval_runs WHERE id = $1", run["run_id"])
            await asyncio.sleep(1)  # stores of the run's chunks wait meanwhile
    finally:
        await deleter.close()
    await asyncio.sleep(2)
    connection = await asyncpg.connect(database_url)
    try:
        left = await connection.fetchrow(
            "SELECT (SELECT count(*) FROM case_results WHERE run_id = $1) AS results,"
            " (SELECT count(*) FROM run_tallies WHERE run_id = $1) AS tallies",
            run["run_id"],
        )
    finally:
        await connection.close()
    assert dict(left) == {"results": 0, "tallies": 0}


async def stored_by_hand(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, database_url: str
) -> str:
    """A run whose every result a worker stored, that died before settling it; its id."""
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(40)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=40)
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(_STORE_EVERY_CASE_BY_HAND, run["run_id"])
    finally:
        await connection.close()
    return str(run["run_id"])


async def test_a_reader_never_answers_with_every_result_in_and_the_run_unsettled(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, database_url: str
) -> None:
    # Stores never settle a run (the lane does once its stores commit): a reader that comes
    # between the two, or after a worker died there, settles it itself.
    run_id = await stored_by_hand(client, fake_agent, database_url)
    run = (await client.get(f"/api/v1/eval-runs/{run_id}")).json()
    assert run["status"] == "completed" and run["counts"]["done"] == 40
    assert run["ci_pass"] and run["pass_rate"] == 1.0


async def test_the_reaper_settles_a_run_its_worker_left_unsettled(
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    run_id = await stored_by_hand(client, fake_agent, database_url)
    workers.start()

    async def status() -> str | None:
        connection = await asyncpg.connect(database_url)
        try:
            found: str = await connection.fetchval(
                "SELECT status FROM eval_runs WHERE id = $1", run_id
            )
        finally:
            await connection.close()
        return found if found == "completed" else None

    await eventually(status, timeout_s=30, what="the reaper settling the run")


# The results of every case of the run, its chunks done and a tally of them: what a worker's
# stores write, without the settling a lane does after them.
_STORE_EVERY_CASE_BY_HAND = """
WITH stored AS (
    INSERT INTO case_results (run_id, test_case_id, trial, revision_id, outcome, graded,
        pass_fail, no_checks, errored, score, partially_graded, judge_reasoning,
        check_results, ungraded_items, output_reported, tool_calls_reported)
    SELECT run_id, test_case_id, 1, revision_id, 'passed', true, true, false, false, 1.0,
           false, '', '[]', '[]', false, false
    FROM eval_run_cases WHERE run_id = $1
    RETURNING 1
), chunks AS (
    UPDATE run_chunks SET state = 'done' WHERE run_id = $1 RETURNING 1
)
INSERT INTO run_tallies (run_id, done, graded, passed)
SELECT $1, count(*), count(*), count(*) FROM stored
"""
