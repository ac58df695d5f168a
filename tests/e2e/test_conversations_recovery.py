"""A run of many conversations survives Redis and PostgreSQL restarting mid-run: each
conversation is stored exactly once, all its turns from one attempt (contract section 13,
crash safety)."""

from __future__ import annotations

import asyncio
import signal
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentlasso.config import Settings
from tests.e2e.test_conversations_server import add_case, stored_rows
from tests.e2e.test_server_recovery import private_redis
from tests.support.api import all_results, create_dataset, register_agent, start_run, wait_done
from tests.support.conversational_agent import ConversationalAgent, running_conversational_agent
from tests.support.databases import drop_database, fresh_database, new_project_key
from tests.support.private_postgres import private_postgres
from tests.support.processes import WorkerProcesses, api_process, free_port
from tests.support.waiting import eventually

CONVERSATIONS = 100
TURNS = [{"user": f"Order 7{n}00: refund it, turn {n + 1}."} for n in range(5)]
CHECKS = [{"type": "tool_called", "tool": "stripe.refund"}]
FINAL = {"completed", "failed", "cancelled"}


@pytest.fixture
def agent() -> Iterator[ConversationalAgent]:
    with running_conversational_agent() as server:
        server.delay_s = 0.05
        yield server


def platform_env(settings: Settings) -> dict[str, str]:
    return {
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
    }


async def conversation_run(client: httpx.AsyncClient, agent_url: str) -> str:
    """A run of CONVERSATIONS five-turn conversations, five at once; its id."""
    agent_id = await register_agent(client, agent_url)
    dataset = await create_dataset(client)
    for _ in range(CONVERSATIONS):
        await add_case(client, dataset["id"], conversation={"turns": TURNS}, checks=CHECKS)
    run = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id, concurrency=5)
    return str(run["run_id"])


async def settled(client: httpx.AsyncClient, run_id: str, timeout_s: float = 180) -> dict[str, Any]:
    """The run once it ends; the platform's own errors while it recovers are waited out."""

    async def final() -> dict[str, Any] | None:
        try:
            response = await client.get(f"/api/v1/eval-runs/{run_id}", params={"wait_s": 5})
        except httpx.HTTPError:
            return None
        run: dict[str, Any] = response.json() if response.status_code == 200 else {}
        return run if run.get("status") in FINAL else None

    return await eventually(final, timeout_s, what=f"run {run_id} ending", every_s=0.5)


async def assert_each_conversation_once_unmixed(
    client: httpx.AsyncClient, agent: ConversationalAgent, database_url: str, run_id: str
) -> None:
    final = await settled(client, run_id)
    assert final["status"] == "completed", final
    assert final["counts"]["done"] == CONVERSATIONS, final["counts"]
    assert final["counts"]["passed"] == CONVERSATIONS, final["counts"]
    assert len(await all_results(client, run_id)) == CONVERSATIONS
    rows = await stored_rows(database_url, run_id)
    assert len(rows) == CONVERSATIONS and len({r["case_id"] for r in rows}) == CONVERSATIONS
    asked: dict[str, list[int]] = defaultdict(list)
    ids_of_case: dict[str, set[str]] = defaultdict(set)
    for request in agent.requests:
        asked[request["conversation_id"]].append(request["turn"])
        ids_of_case[request["test_case_id"]].add(request["conversation_id"])
    for row in rows:
        assert [t["turn"] for t in row["turns"]] == [1, 2, 3, 4, 5], row
        # Every stored turn was answered under the one conversation id the result carries.
        signed = {t["actual_output"].rsplit("#", 1)[1] for t in row["turns"]}
        assert len(signed) == 1, row["turns"]
        (conversation_id,) = signed
        assert conversation_id in ids_of_case[row["case_id"]]
        assert asked[conversation_id] == [1, 2, 3, 4, 5], "that attempt played each turn once"
        # A conversation cut short by the restart was played again: the result counts it.
        assert row["conversation_attempt"] >= len(ids_of_case[row["case_id"]]), row


async def test_a_redis_restart_mid_run_keeps_every_conversation_once(
    settings: Settings,
    api_key: str,
    agent: ConversationalAgent,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    port = free_port()
    redis_url = f"redis://127.0.0.1:{port}/0"
    with (
        private_redis(port) as redis_server,
        api_process(settings.database_url, redis_url, platform_env(settings)) as (base_url, _),
    ):
        workers.start(redis_url=redis_url)
        async with httpx.AsyncClient(
            base_url=base_url, headers={"x-api-key": api_key}, timeout=60
        ) as client:
            run_id = await conversation_run(client, agent.url)
            mid = await wait_done(client, run_id, 10)
            assert mid["counts"]["done"] < CONVERSATIONS, "restarted mid-run"
            redis_server.kill()  # everything queued in Redis is gone, mid-conversation
            redis_server.wait()
            await asyncio.sleep(1)
            with private_redis(port):
                await assert_each_conversation_once_unmixed(client, agent, database_url, run_id)


async def test_a_postgres_restart_mid_run_keeps_every_conversation_once(
    settings: Settings, agent: ConversationalAgent
) -> None:
    with private_postgres() as postgres:
        database_url = await fresh_database(postgres.server_url)
        api_key = await new_project_key(database_url)
        workers = WorkerProcesses(
            database_url, settings.redis_url, settings.queue_name, settings.secret_key or ""
        )
        try:
            with api_process(database_url, settings.redis_url, platform_env(settings)) as (
                base_url,
                _,
            ):
                workers.start()
                async with httpx.AsyncClient(
                    base_url=base_url, headers={"x-api-key": api_key}, timeout=60
                ) as client:
                    run_id = await conversation_run(client, agent.url)
                    mid = await wait_done(client, run_id, 10)
                    assert mid["counts"]["done"] < CONVERSATIONS, "stopped mid-run"
                    postgres.stop(signal.SIGINT)  # every session cut, mid-conversation
                    await asyncio.sleep(1.5)
                    postgres.start()
                    await assert_each_conversation_once_unmixed(client, agent, database_url, run_id)
        finally:
            workers.stop_all()
            await drop_database(postgres.server_url, database_url)
