"""Server mode survives its parts stopping: SIGTERM, a Redis restart, a chunk failing again."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator

import asyncpg
import httpx
import redis

from agentlasso.config import Settings
from agentlasso.devstack.valkey import valkey_binary
from tests.support.api import (
    all_results,
    dataset_of,
    register_agent,
    start_run,
    wait_done,
    wait_final,
)
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import WorkerProcesses, api_process, free_port
from tests.support.waiting import wait_until


async def done_count(client: httpx.AsyncClient, run_id: str) -> int:
    run = (await client.get(f"/api/v1/eval-runs/{run_id}")).json()
    return int(run["counts"]["done"])


async def test_sigterm_hands_back_in_flight_work(
    client: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    fake_agent.delay_s = 0.5
    first = workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(120)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=20)
    await wait_done(client, run["run_id"], 20)
    first.send_signal(signal.SIGTERM)
    stopped_at = time.monotonic()
    first.wait(timeout=30)
    assert time.monotonic() - stopped_at < 15, "a SIGTERMed worker stops promptly"
    stranded = await done_count(client, run["run_id"])
    assert stranded < 120

    workers.start()
    final = await wait_final(client, run["run_id"], wait_s=90)
    assert final["status"] == "completed" and final["counts"]["done"] == 120
    assert len(await all_results(client, run["run_id"])) == 120


async def test_a_run_whose_lanes_were_all_lost_still_completes(
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    # A lane can be lost holding no chunk: its worker dies, or its claim fails, between
    # storing one chunk and claiming the next. Made here by hand: the run's queued chunks go
    # back to pending, and nothing is queued for them. The reaper sees the run short of lanes.
    fake_agent.delay_s = 0.05
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(300)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=100)
    connection = await asyncpg.connect(database_url)
    try:
        orphaned = await connection.fetchval(
            "WITH back AS (UPDATE run_chunks SET state = 'pending' WHERE run_id = $1"
            " AND state = 'queued' RETURNING 1) SELECT count(*) FROM back",
            run["run_id"],
        )
    finally:
        await connection.close()
    assert orphaned == 2, "a run of 100 starts with two lanes of 50"

    workers.start(concurrency=200)
    final = await wait_final(client, run["run_id"], wait_s=60)
    assert final["status"] == "completed" and final["counts"]["done"] == 300
    assert len({r["test_case_id"] for r in await all_results(client, run["run_id"])}) == 300
    assert fake_agent.most_in_flight <= 100, "the lanes replaced are the run's two, no more"


@contextlib.contextmanager
def private_redis(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A Redis (Valkey) of this test's own, keeping nothing on disk, on a fixed port."""
    process = subprocess.Popen(
        [str(valkey_binary()), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    wait_until(lambda: _answers(port), 10, what="the test's Redis starting")
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def _answers(port: int) -> bool:
    try:
        return bool(redis.Redis(port=port, socket_timeout=0.5).ping())
    except redis.RedisError:
        return False


async def test_a_redis_restart_mid_run_strands_nothing(
    settings: Settings, api_key: str, fake_agent: FakeAgentServer, workers: WorkerProcesses
) -> None:
    fake_agent.delay_s = 0.05
    port = free_port()
    redis_url = f"redis://127.0.0.1:{port}/0"
    env = {
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
    }
    with (
        private_redis(port) as redis_server,
        api_process(settings.database_url, redis_url, env) as (base_url, _pid),
    ):
        workers.start(redis_url=redis_url)
        # Long-polls wait up to 30 s: the client waits longer than they do (httpx's default
        # of 5 s cut them short whenever the run took longer than that to finish).
        async with httpx.AsyncClient(
            base_url=base_url, headers={"x-api-key": api_key}, timeout=60
        ) as client:
            agent_id = await register_agent(client, fake_agent.url)
            dataset_id = await dataset_of(client, [f"refund {n}" for n in range(600)])
            run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=20)
            await wait_done(client, run["run_id"], 100)
            redis_server.kill()  # everything queued in Redis is gone
            redis_server.wait()
            # Away for a second: the workers' polls find no Redis, and must outlive that.
            await asyncio.sleep(1)
            with private_redis(port):
                final = await wait_final(client, run["run_id"], wait_s=120)
                stored = await all_results(client, run["run_id"])
    assert final["status"] == "completed", final
    assert final["counts"]["done"] == 600 and len(stored) == 600
    assert len({r["test_case_id"] for r in stored}) == 600


async def test_a_chunk_that_keeps_failing_fails_its_run_with_the_reason(
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund a", "refund b"])
    connection = await asyncpg.connect(database_url)
    try:
        # Stored content no grader can read: an internal fault, not an agent failure.
        await connection.execute(
            'UPDATE test_case_revisions SET checks = \'[{"type": "bogus"}]\'::jsonb'
            " WHERE dataset_id = $1",
            uuid.UUID(dataset_id),
        )
    finally:
        await connection.close()
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
    final = await wait_final(client, run["run_id"], wait_s=120)
    assert final["status"] == "failed"
    assert final["ci_pass"] is False
    assert "failed 5 times" in final["ci_fail_reason"]


async def test_on_sigterm_the_api_answers_waiters_and_closes_streams(
    settings: Settings, api_key: str, fake_agent: FakeAgentServer
) -> None:
    env = {
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
    }
    with api_process(settings.database_url, settings.redis_url, env) as (base_url, pid):
        async with httpx.AsyncClient(
            base_url=base_url, headers={"x-api-key": api_key}, timeout=90
        ) as client:
            agent_id = await register_agent(client, fake_agent.url)
            dataset_id = await dataset_of(client, ["refund"])
            run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)  # no worker

            async def long_poll() -> tuple[dict[str, object], float]:
                answer = await client.get(
                    f"/api/v1/eval-runs/{run['run_id']}", params={"wait_s": 60}
                )
                return answer.json(), time.monotonic()

            async def stream() -> tuple[list[str], float]:
                events: list[str] = []
                url = f"/api/v1/eval-runs/{run['run_id']}/events"
                async with client.stream("GET", url) as response:
                    async for line in response.aiter_lines():
                        if line.startswith("event:"):
                            events.append(line.split(":", 1)[1].strip())
                return events, time.monotonic()

            polling = asyncio.create_task(long_poll())
            streaming = asyncio.create_task(stream())
            await asyncio.sleep(1.0)
            signalled = time.monotonic()
            os.kill(pid, signal.SIGTERM)
            (answer, answered), (events, closed) = await asyncio.gather(polling, streaming)
    assert answer["status"] == "queued", "answered with the status as it stands"
    assert answered - signalled < 3
    assert events[0] == "progress" and events[-1] == "shutdown"
    assert closed - signalled < 3
