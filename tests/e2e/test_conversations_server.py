"""Conversation cases in server mode, with real worker processes and a conversational agent
that keeps state by conversation_id (contract section 13)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import msgspec
import pytest

from tests.support.api import all_results, create_dataset, register_agent, start_run, wait_final
from tests.support.conversational_agent import ConversationalAgent, running_conversational_agent
from tests.support.processes import WorkerProcesses
from tests.support.waiting import eventually

ORDER_CASE = {
    "turns": [
        {
            "user": "Hi, my order 1234 has not arrived.",
            "checks": [{"id": "c1", "type": "tool_called", "tool": "orders.lookup"}],
        },
        {
            "user": "Can I get a refund?",
            "checks": [{"id": "c2", "type": "tool_called", "tool": "stripe.refund"}],
        },
        {
            "user": "What was my order number again?",
            "checks": [{"id": "c3", "type": "output_contains", "value": "1234"}],
        },
    ]
}
# The agent ends it at turn 2: turns 3 and 4 are never played.
ENDING_CASE = {
    "turns": [
        {"user": "Order 5678, please."},
        {"user": "All good now, bye!"},
        {"user": "Are you still there?"},
        {"user": "Hello?"},
    ]
}
ENDING_CHECKS = [{"id": "e1", "type": "output_contains", "value": "Goodbye"}]


@pytest.fixture
def agent() -> Iterator[ConversationalAgent]:
    with running_conversational_agent() as server:
        yield server


async def add_case(client: httpx.AsyncClient, dataset_id: str, **body: Any) -> str:
    response = await client.post(f"/api/v1/datasets/{dataset_id}/test-cases", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def stored_rows(database_url: str, run_id: str) -> list[dict[str, Any]]:
    """The run's results as stored: their turns, how they ended, and the attempt."""
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch(
            "SELECT test_case_id::text AS case_id, trial, turns::text AS turns, ended_by,"
            " conversation_attempt, actual_output::text AS output, judge_reasoning"
            " FROM case_results WHERE run_id = $1",
            run_id,
        )
    finally:
        await connection.close()
    return [{**dict(row), "turns": msgspec.json.decode(row["turns"] or "null")} for row in rows]


async def test_a_scripted_conversation_is_played_and_graded_turn_by_turn(
    client: httpx.AsyncClient,
    agent: ConversationalAgent,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    workers.start()
    agent_id = await register_agent(client, agent.url)
    dataset = await create_dataset(client, data_context={"region": "eu"})
    order_case = await add_case(client, dataset["id"], conversation=ORDER_CASE)
    ending_case = await add_case(
        client, dataset["id"], conversation=ENDING_CASE, checks=ENDING_CHECKS
    )
    run = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id, trials=2)
    final = await wait_final(client, run["run_id"])
    assert final["status"] == "completed" and final["counts"]["done"] == 4, final
    assert final["counts"]["passed"] == 4, await all_results(client, run["run_id"])

    # One conversation id per trial, stable over its turns; the history as it was.
    by_case: dict[str, list[str]] = defaultdict(list)
    for request in agent.requests:
        if request["conversation_id"] not in by_case[request["test_case_id"]]:
            by_case[request["test_case_id"]].append(request["conversation_id"])
        assert request["source"] == "agentlasso-test" and request["context"] == {"region": "eu"}
    assert len(by_case[order_case]) == 2 and len(by_case[ending_case]) == 2
    for conversation_id in by_case[order_case]:
        assert agent.turns_of(conversation_id) == [1, 2, 3]
    for conversation_id in by_case[ending_case]:
        assert agent.turns_of(conversation_id) == [1, 2], "end: true is honoured"
    assert agent.history_mismatches == [], "each turn's messages are the history before it"
    third = next(r for r in agent.requests if r["turn"] == 3)
    assert [m["role"] for m in third["messages"]] == ["user", "assistant"] * 2
    assert third["messages"][1]["tool_calls"][0]["name"] == "orders.lookup"
    assert third["input"] == "What was my order number again?"

    rows = {(r["case_id"], r["trial"]): r for r in await stored_rows(database_url, run["run_id"])}
    ordered = rows[(order_case, 1)]
    assert ordered["ended_by"] == "script" and ordered["conversation_attempt"] == 1
    assert [t["turn"] for t in ordered["turns"]] == [1, 2, 3]
    assert "1234" in ordered["turns"][2]["actual_output"]
    assert not any(t["simulated"] for t in ordered["turns"])
    ended = rows[(ending_case, 2)]
    assert ended["ended_by"] == "agent" and len(ended["turns"]) == 2
    results = await all_results(client, run["run_id"])
    first = next(r for r in results if r["test_case_id"] == order_case)
    assert [c.get("turn") for c in first["check_results"]] == [1, 2, 3]
    assert [c["name"] for c in first["actual_tool_calls"]] == ["orders.lookup", "stripe.refund"]

    # The agent forgets the order number at turn 3: that turn's check fails, by name.
    agent.forget_at_turn_3 = True
    again = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id)
    final = await wait_final(client, again["run_id"])
    results = {r["test_case_id"]: r for r in await all_results(client, again["run_id"])}
    failed = results[order_case]
    assert failed["outcome"] == "failed"
    assert "turn 3: c3 output_contains" in failed["judge_reasoning"], failed["judge_reasoning"]
    assert [c["passed"] for c in failed["check_results"]] == [True, True, False]
    assert results[ending_case]["outcome"] == "passed"


async def test_bugs_the_checks_catch_and_an_agent_that_never_ends(
    client: httpx.AsyncClient,
    agent: ConversationalAgent,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    agent.refund_before_lookup = True
    agent.never_end = True
    workers.start()
    agent_id = await register_agent(client, agent.url)
    dataset = await create_dataset(client)
    promise_case = await add_case(
        client,
        dataset["id"],
        conversation={"turns": [{"user": "I want a refund!", "checks": [
            {"id": "p1", "type": "output_not_contains", "value": "guarantee"},
        ]}, {"user": "It is order 4321."}]},
    )  # fmt: skip
    endless_case = await add_case(
        client, dataset["id"], conversation=ENDING_CASE, checks=ENDING_CHECKS
    )
    run = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id)
    final = await wait_final(client, run["run_id"])
    assert final["status"] == "completed", final
    results = {r["test_case_id"]: r for r in await all_results(client, run["run_id"])}
    assert results[promise_case]["outcome"] == "failed"
    assert "turn 1: p1 output_not_contains" in results[promise_case]["judge_reasoning"]
    rows = {r["case_id"]: r for r in await stored_rows(database_url, run["run_id"])}
    assert rows[endless_case]["ended_by"] == "script"
    assert len(rows[endless_case]["turns"]) == 4, "an agent that never ends plays every turn"
    assert results[endless_case]["outcome"] == "failed", "its final reply says no goodbye"


async def test_a_worker_killed_mid_conversation_stores_each_conversation_once_unmixed(
    client: httpx.AsyncClient,
    agent: ConversationalAgent,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    agent.delay_s = 0.3  # five turns: 1.5 s a conversation
    pids = {workers.start(concurrency=20).pid, workers.start(concurrency=20).pid}
    agent_id = await register_agent(client, agent.url)
    dataset = await create_dataset(client)
    turns = [{"user": f"Order {1000 + n}: refund it, turn {n + 1}."} for n in range(5)]
    for number in range(60):
        await add_case(
            client, dataset["id"], conversation={"turns": turns},
            checks=[{"id": f"k{number}", "type": "tool_called", "tool": "stripe.refund"}],
        )  # fmt: skip
    run = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id, concurrency=20)
    connection = await asyncpg.connect(database_url)
    try:

        async def mid_conversation() -> str | None:
            holder: str | None = await connection.fetchval(
                "SELECT worker_id FROM run_chunks WHERE run_id = $1 AND state = 'running'"
                " AND kind = 'agent' LIMIT 1",
                run["run_id"],
            )
            asked = {r["turn"] for r in agent.requests}
            return holder if holder and asked & {2, 3, 4} else None

        holder = await eventually(mid_conversation, 30, what="a conversation in flight")
        doomed = int(holder.split(":")[1])
        assert doomed in pids
        os.kill(doomed, signal.SIGKILL)
        final = await wait_final(client, run["run_id"], wait_s=120)
        reissued = await connection.fetchval(
            "SELECT count(*) FROM run_chunks WHERE run_id = $1 AND attempt > 1", run["run_id"]
        )
    finally:
        await connection.close()
    assert final["status"] == "completed" and final["counts"]["done"] == 60, final
    assert reissued >= 1, "the dead worker's chunk was found again and redone"

    rows = await stored_rows(database_url, run["run_id"])
    assert len(rows) == 60 and len({r["case_id"] for r in rows}) == 60
    conversations: dict[str, list[str]] = defaultdict(list)
    turns_by_id: dict[str, list[int]] = defaultdict(list)
    for request in agent.requests:
        ids = conversations[request["test_case_id"]]
        if request["conversation_id"] not in ids:
            ids.append(request["conversation_id"])
        turns_by_id[request["conversation_id"]].append(request["turn"])
    replayed = 0
    for row in rows:
        assert [t["turn"] for t in row["turns"]] == [1, 2, 3, 4, 5]
        # Every turn of a stored result answered under the one conversation id it carries.
        seen = {t["actual_output"].rsplit("#", 1)[1] for t in row["turns"]}
        assert len(seen) == 1, row["turns"]
        (conversation_id,) = seen
        assert conversation_id in conversations[row["case_id"]]
        assert turns_by_id[conversation_id] == [1, 2, 3, 4, 5]
        if len(conversations[row["case_id"]]) > 1:
            replayed += 1
            assert row["conversation_attempt"] >= 2, "a replayed conversation counts its attempt"
    assert replayed >= 1, "the killed worker was mid-conversation"


async def test_cancel_stops_conversations_within_seconds_and_keeps_finished_ones(
    client: httpx.AsyncClient,
    agent: ConversationalAgent,
    workers: WorkerProcesses,
    database_url: str,
) -> None:
    agent.delay_s = 0.2  # a second a conversation
    workers.start()
    agent_id = await register_agent(client, agent.url)
    dataset = await create_dataset(client)
    turns = [{"user": f"Order 4242: refund it, turn {n + 1}."} for n in range(5)]
    checks = [{"type": "tool_called", "tool": "stripe.refund"}]
    for _ in range(100):
        await add_case(client, dataset["id"], conversation={"turns": turns}, checks=checks)
    run = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id, concurrency=10)
    await eventually(
        lambda: _done_at_least(client, run["run_id"], 10), 60, what="ten conversations done"
    )
    answer = (await client.post(f"/api/v1/eval-runs/{run['run_id']}/cancel")).json()
    assert answer["status"] == "cancelled"
    await asyncio.sleep(2)
    calls_then = len(agent.requests)
    await asyncio.sleep(2)
    assert len(agent.requests) == calls_then, "no turn is played after the cancel"
    rows = await stored_rows(database_url, run["run_id"])
    assert 10 <= len(rows) < 100
    assert all([t["turn"] for t in row["turns"]] == [1, 2, 3, 4, 5] for row in rows), (
        "only finished conversations are kept"
    )


async def _done_at_least(client: httpx.AsyncClient, run_id: str, count: int) -> bool | None:
    run = (await client.get(f"/api/v1/eval-runs/{run_id}")).json()
    return True if run["counts"]["done"] >= count else None
