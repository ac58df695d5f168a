"""Benchmark of conversation cases in server mode: real API, worker and agent processes.

    .venv/bin/python -m tests.perf.bench_conversations              # 10,000 conversations
    .venv/bin/python -m tests.perf.bench_conversations --cases 200  # a small run
    .venv/bin/python -m tests.perf.bench_conversations --workers 2  # two workers

Conversations of 5 scripted turns (a check on each turn and one on the whole), a 50 ms agent,
concurrency 200 (the worker's call slots sized so that one project's share of them, 80% by
default, is the run's 200: `slots_for`): ideal wall 10,000 x 5 x 50 ms / 200 = 12.5 s. Then a
single-turn run of as many cases on the same processes, for the CPU a turn costs against a
single-turn case. Prints the wall, the CPU per turn and per case over API and worker, and the
worker's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from typing import Any

import httpx
import msgspec

from tests.perf.bench_server_mode import cpu_s, follow, start
from tests.perf.harness import (
    UNLIMITED,
    delayed_agent,
    imported_dataset,
    new_key,
    rss_mb,
    server_urls,
    slots_for,
    worker_process,
)
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import SECRET_KEY, api_process

TURNS = 5


def conversation_case(number: int) -> dict[str, Any]:
    """A conversation of TURNS scripted turns, each checked, and a check on the whole."""
    turns = [
        {
            "user": f"Order #{number}, message {turn}: where is my refund?",
            "checks": [{"type": "output_contains", "value": "3-5 business days"}],
        }
        for turn in range(1, TURNS + 1)
    ]
    checks = [{"type": "tool_called", "tool": "stripe.refund"}]
    return {"conversation": {"turns": turns}, "checks": checks}


async def conversation_dataset(client: httpx.AsyncClient, cases: int) -> str:
    """A new dataset of `cases` conversations; its id."""
    dataset = (await client.post("/api/v1/datasets", json={"name": "conversations"})).json()
    encoder = msgspec.json.Encoder()
    for first in range(0, cases, 2_000):
        lines = b"".join(
            encoder.encode(conversation_case(n)) + b"\n"
            for n in range(first, min(first + 2_000, cases))
        )
        imported = await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases/import",
            content=lines,
            headers={"content-type": "application/x-ndjson"},
        )
        assert imported.status_code == 201, imported.text[:300]
    return str(dataset["id"])


async def timed_run(
    client: httpx.AsyncClient, pids: dict[str, int], dataset_id: str, agent_id: str, c: int
) -> tuple[dict[str, Any], float, dict[str, float]]:
    """A run to its end: the final run, its wall seconds and each process's CPU seconds."""
    before = {name: cpu_s(pid) for name, pid in pids.items()}
    started = time.perf_counter()
    run, _ = await follow(client, await start(client, dataset_id, agent_id, c))
    wall = time.perf_counter() - started
    return run, wall, {name: cpu_s(pid) - before[name] for name, pid in pids.items()}


def cpu_line(label: str, cpu: dict[str, float], count: int) -> str:
    per = {name: seconds * 1000 / max(count, 1) for name, seconds in cpu.items()}
    parts = ", ".join(f"{name} {ms:.3f} ms" for name, ms in per.items())
    return f"CPU per {label}: {parts}; total {sum(per.values()):.3f} ms"


async def bench(base: str, key: str, pids: dict[str, int], args: argparse.Namespace) -> None:
    async with httpx.AsyncClient(base_url=base, headers={"x-api-key": key}, timeout=120) as client:
        agent = {"name": "bench", "url": args.agent_url}
        agent_id = (await client.post("/api/v1/agents", json=agent)).json()["id"]
        conversations = await conversation_dataset(client, args.cases)
        single = await imported_dataset(client, args.cases)
        # A first run warms the worker up (imports, the agent's connections): neither measured
        # run pays for it.
        await follow(client, await start(client, await imported_dataset(client, 50), agent_id, 50))
        run, wall, cpu = await timed_run(client, pids, conversations, agent_id, args.concurrency)
        rss_after_conversations = rss_mb(pids["worker"], "VmHWM")
        plain, plain_wall, plain_cpu = await timed_run(
            client, pids, single, agent_id, args.concurrency
        )
    done, turns = run["counts"]["done"], run["counts"]["done"] * TURNS
    ideal = turns * args.delay_ms / 1000 / args.concurrency
    print(
        f"{done:,} conversations of {TURNS} turns, agent {args.delay_ms:g} ms, concurrency "
        f"{args.concurrency}: {wall:.2f} s = {turns / wall:,.0f} turns/s; ideal {ideal:.2f} s, "
        f"wall/ideal {wall / ideal:.2f} (status {run['status']}, passed "
        f"{run['counts']['passed']:,})"
    )
    print(cpu_line("turn", cpu, turns))
    print(cpu_line("conversation", cpu, done))
    plain_done = plain["counts"]["done"]
    print(
        f"single-turn, {plain_done:,} cases: {plain_wall:.2f} s; "
        + cpu_line("case", plain_cpu, plain_done)
    )
    per_turn = sum(cpu.values()) / max(turns, 1)
    per_case = sum(plain_cpu.values()) / max(plain_done, 1)
    print(f"a turn costs {per_turn / per_case:.2f} x the CPU of a single-turn case")
    print(
        f"worker peak RSS {rss_after_conversations:.0f} MB after the conversations, "
        f"{rss_mb(pids['worker'], 'VmHWM'):.0f} MB after both; "
        f"API peak RSS {rss_mb(pids['api'], 'VmHWM'):.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--delay-ms", type=float, default=50)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        # The per-host quota would pace the agent's calls: the benchmark measures the platform.
        env = {
            "DATABASE_URL": database_url, "REDIS_URL": redis_url,
            "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}", **UNLIMITED,
        }  # fmt: skip
        try:
            with (
                delayed_agent(args.delay_ms) as agent_url,
                api_process(database_url, redis_url, env) as (base_url, api_pid),
                contextlib.ExitStack() as workers,
            ):
                # More workers: each its own process, as an operator scales them.
                worker_pids = [
                    workers.enter_context(worker_process(env, slots_for(args.concurrency)))
                    for _ in range(args.workers)
                ]
                args.agent_url = agent_url
                pids = {"api": api_pid, "worker": worker_pids[0]}
                pids.update({f"worker {n + 2}": pid for n, pid in enumerate(worker_pids[1:])})
                asyncio.run(bench(base_url, new_key(database_url), pids, args))
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
