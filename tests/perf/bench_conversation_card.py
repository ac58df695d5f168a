"""Benchmark: a 50-turn conversation's case card, by the server's own time.

    .venv/bin/python -m tests.perf.bench_conversation_card [--turns 50] [--rounds 60]

A real `agentlasso api` process, PostgreSQL and Redis; a CI run of one conversation case whose
every turn has a check and two tool calls, its result stored through the recording path; the
card asked for `rounds` times by a signed-in session. The figure is the page's Server-Timing
`total` (the server's time, without the loopback round trip). Target (issue 25): p95 under
30 ms for 50 turns.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics

import httpx

from tests.perf.bench_web import p, server_timing, signed_in
from tests.perf.harness import UNLIMITED, new_key, server_urls
from tests.support.conversation_results import played, record_conversation
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import SECRET_KEY, api_process

TARGET_MS = 30


def conversation_case(turns: int) -> dict[str, object]:
    """A conversation of `turns` scripted turns, each with a tool check and a text check."""
    return {
        "description": f"A {turns}-turn conversation",
        "conversation": {
            "turns": [
                {
                    "user": f"Turn {number}: where is order {number}?",
                    "checks": [
                        {"type": "tool_called", "tool": "orders.lookup"},
                        {"type": "output_contains", "value": f"order {number}"},
                    ],
                }
                for number in range(1, turns + 1)
            ]
        },
        "checks": [{"type": "tool_not_called", "tool": "orders.cancel"}],
    }


def run(base_url: str, database_url: str, key: str, turns: int, rounds: int) -> None:
    api = httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=120)
    dataset = api.post("/api/v1/datasets", json={"name": "bench conversations"}).json()
    case = api.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json=conversation_case(turns)
    ).json()
    run_id = api.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]}).json()["run_id"]
    calls = [
        {"name": "orders.lookup", "arguments": {"order": 1234, "why": "the customer asked"}},
        {"name": "orders.status", "arguments": {"order": 1234}},
    ]
    replies = [
        (f"Turn {n}: where is order {n}?", f"Order {n} is on its way. " * 8, calls)
        for n in range(1, turns + 1)
    ]
    asyncio.run(record_conversation(database_url, run_id, case["id"], played(replies)))
    browser = signed_in(base_url, key)
    path = f"/runs/{run_id}/cases/{case['id']}"
    for _ in range(3):
        assert browser.get(path).status_code == 200
    totals = []
    for _ in range(rounds):
        answer = browser.get(path)
        assert answer.status_code == 200, answer.text[:300]
        totals.append(server_timing(answer)["total"])
    print(
        f"case card, {turns}-turn conversation: server time p50 {statistics.median(totals):.1f} "
        f"ms, p95 {p(totals, 0.95):.1f} ms (target p95 < {TARGET_MS} ms); "
        f"page {len(answer.content) / 1024:.0f} KB"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        env = {
            "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}", **UNLIMITED,
        }  # fmt: skip
        try:
            with api_process(database_url, redis_url, env) as (base_url, _pid):
                run(base_url, database_url, new_key(database_url), args.turns, args.rounds)
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
