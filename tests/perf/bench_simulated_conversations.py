"""Benchmark of conversations with a simulated user in server mode: real API, worker and agent
processes, a fake model playing the user with a fixed latency (tests/perf/delayed_model.py, in
its own process: the real model's CPU is not on the platform's machine).

    .venv/bin/python -m tests.perf.bench_simulated_conversations               # 1,000
    .venv/bin/python -m tests.perf.bench_simulated_conversations --cases 100   # a small run
    .venv/bin/python -m tests.perf.bench_simulated_conversations --workers 2   # two workers

Each conversation opens with its `opening` (no model call), then the simulated user writes
every next message until max_turns (6): 6 agent calls of `--delay-ms` (50) and 5 model calls
of `--model-ms` (200) one after another, 1.3 s a conversation. At concurrency 200 (the worker's
call slots and the judge's concurrency sized so that one project's share of them, 80% by
default, is the run's 200: `slots_for`) the latencies allow 1,000 / 200 waves x 1.3 s = 6.5 s;
the bar is 1.5 x that. Prints the wall against it, the CPU per turn of the API and the worker,
and what the run counted of the simulated user's calls.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import time
from typing import Any

import httpx
import msgspec

from tests.perf.bench_server_mode import cpu_s, follow, start
from tests.perf.delayed_model import MODEL
from tests.perf.harness import (
    UNLIMITED,
    delayed_agent,
    delayed_model,
    new_key,
    rss_mb,
    server_urls,
    slots_for,
    worker_process,
)
from tests.support.databases import drop_database, fresh_database
from tests.support.fake_anthropic import FAKE_API_KEY
from tests.support.processes import SECRET_KEY, api_process

MAX_TURNS = 6
BAR = 1.5


def simulated_case(number: int) -> dict[str, Any]:
    """A conversation the simulated user plays from its opening to max_turns."""
    return {
        "conversation": {
            "simulated_user": {
                "persona": "A customer whose parcel is late",
                "goal": f"Learn when order {number} arrives",
                "max_turns": MAX_TURNS,
                "opening": f"Where is my order {number}?",
            }
        },
        "checks": [{"type": "output_contains", "value": "3-5 business days"}],
    }


async def simulated_dataset(client: httpx.AsyncClient, cases: int) -> str:
    dataset = (await client.post("/api/v1/datasets", json={"name": "simulated"})).json()
    lines = b"".join(msgspec.json.encode(simulated_case(n)) + b"\n" for n in range(cases))
    imported = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines,
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text[:300]
    return str(dataset["id"])


async def answered(model_url: str) -> int:
    """How many requests the fake model has answered."""
    async with httpx.AsyncClient() as client:
        return int((await client.get(f"{model_url}/count")).text)


async def bench(
    base: str, key: str, pids: dict[str, int], model_url: str, args: argparse.Namespace
) -> None:
    async with httpx.AsyncClient(base_url=base, headers={"x-api-key": key}, timeout=120) as client:
        agent = {"name": "bench", "url": args.agent_url}
        agent_id = (await client.post("/api/v1/agents", json=agent)).json()["id"]
        # A first small run warms the worker up (imports, connections to agent and model).
        warm = await simulated_dataset(client, 20)
        await follow(client, await start(client, warm, agent_id, 20))
        dataset_id = await simulated_dataset(client, args.cases)
        asked_before = await answered(model_url)
        before = {name: cpu_s(pid) for name, pid in pids.items()}
        started = time.perf_counter()
        run, _ = await follow(client, await start(client, dataset_id, agent_id, args.concurrency))
        wall = time.perf_counter() - started
        cpu = {name: cpu_s(pid) - before[name] for name, pid in pids.items()}
        asked = await answered(model_url) - asked_before
    done = run["counts"]["done"]
    turns = done * MAX_TURNS
    per_conversation_s = (MAX_TURNS * args.delay_ms + (MAX_TURNS - 1) * args.model_ms) / 1000
    # As many waves of `concurrency` conversations as it takes, each as long as one.
    allowed = math.ceil(done / args.concurrency) * per_conversation_s
    print(
        f"{done:,} simulated conversations of {MAX_TURNS} turns, agent {args.delay_ms:g} ms, "
        f"model {args.model_ms:g} ms, concurrency {args.concurrency}: {wall:.2f} s; the "
        f"latencies allow {allowed:.2f} s; wall/allowed {wall / allowed:.2f} (bar {BAR}); "
        f"status {run['status']}, passed {run['counts']['passed']:,}"
    )
    per_turn = {name: seconds * 1000 / max(turns, 1) for name, seconds in cpu.items()}
    parts = ", ".join(f"{name} {ms:.3f} ms" for name, ms in per_turn.items())
    print(f"CPU per turn: {parts}; total {sum(per_turn.values()):.3f} ms")
    judge = run.get("judge") or {}
    print(
        f"model requests the fake answered: {asked:,} (expected {done * (MAX_TURNS - 1):,}); "
        f"the run counted {judge.get('calls', 0):,} calls, ${judge.get('cost_usd', 0):.4f}"
    )
    print(f"worker peak RSS {rss_mb(pids['worker'], 'VmHWM'):.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1_000)
    parser.add_argument("--delay-ms", type=float, default=50)
    parser.add_argument("--model-ms", type=float, default=200)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with (
        server_urls() as (postgres_url, redis_url),
        delayed_model(args.model_ms) as model_url,
    ):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        env = {
            "DATABASE_URL": database_url, "REDIS_URL": redis_url,
            "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}", **UNLIMITED,
            "ANTHROPIC_API_KEY": FAKE_API_KEY, "ANTHROPIC_BASE_URL": model_url,
            "AGENTLASSO_JUDGE_MODEL": MODEL,
            # The judge's slots too hold a project to its share: sized to give the run its own.
            "AGENTLASSO_JUDGE_CONCURRENCY": str(slots_for(args.concurrency)),
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
                asyncio.run(bench(base_url, new_key(database_url), pids, model_url, args))
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
