"""Benchmarks of server mode: real API, worker and fake-agent processes on 127.0.0.1.

    .venv/bin/python -m tests.perf.bench_server_mode throughput   # 10,000 cases, 50 ms agent, c=200
    .venv/bin/python -m tests.perf.bench_server_mode slow         # 10,000 cases, 2 s agent, c=1000
    .venv/bin/python -m tests.perf.bench_server_mode longpoll     # 500 clients waiting on one run
    .venv/bin/python -m tests.perf.bench_server_mode memory       # 100,000 cases, fast agent
    .venv/bin/python -m tests.perf.bench_server_mode fairness     # 20 cases during 100,000

Targets (issue 5): throughput 1,000 cases/s or more; slow wall 1.2 x ideal or less; CPU 1 ms
per case or less over API and worker; long-poll answers within 250 ms of completion; worker
peak RSS 300 MB or less on 100,000 cases; a 20-case run submitted during a 100,000-case run
gets its first result within 5 s. Each scenario prints its figures.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from tests.perf.harness import (
    delayed_agent,
    imported_dataset,
    new_key,
    rss_mb,
    server_urls,
    worker_process,
)
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import SECRET_KEY, api_process

ROOT = Path(__file__).resolve().parents[2]
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """User plus system CPU seconds a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def prepare(client: httpx.AsyncClient, agent_url: str, cases: int) -> tuple[str, str]:
    """A registered agent and an imported dataset; returns (agent_id, dataset_id)."""
    agent = (await client.post("/api/v1/agents", json={"name": "bench", "url": agent_url})).json()
    return agent["id"], await imported_dataset(client, cases)


async def run_to_end(
    client: httpx.AsyncClient, agent_id: str, dataset_id: str, concurrency: int
) -> tuple[dict[str, Any], float]:
    """Start a run and long-poll it to the end; returns the run and the wall seconds."""
    started = time.perf_counter()
    run, _ = await follow(client, await start(client, dataset_id, agent_id, concurrency))
    return run, time.perf_counter() - started


async def throughput(base: str, key: str, pids: dict[str, int], args: argparse.Namespace) -> None:
    async with httpx.AsyncClient(base_url=base, headers={"x-api-key": key}, timeout=120) as client:
        agent_id, dataset_id = await prepare(client, args.agent_url, args.cases)
        cpu_before = {name: cpu_s(pid) for name, pid in pids.items()}
        run, wall = await run_to_end(client, agent_id, dataset_id, args.concurrency)
        cpu = {name: cpu_s(pid) - cpu_before[name] for name, pid in pids.items()}
    ideal = args.cases * args.delay_ms / 1000 / args.concurrency
    done = run["counts"]["done"]
    versus = f"; ideal {ideal:.2f} s, wall/ideal {wall / ideal:.2f}" if ideal else ""
    print(
        f"{done:,} cases, agent {args.delay_ms:g} ms, concurrency {args.concurrency}: "
        f"{wall:.2f} s = {done / wall:,.0f} cases/s{versus} (status {run['status']})"
    )
    per_case = {name: seconds * 1000 / done for name, seconds in cpu.items()}
    print(
        "CPU per case: "
        + ", ".join(f"{n} {v:.3f} ms" for n, v in per_case.items())
        + f"; total {sum(per_case.values()):.3f} ms (target <= 1 ms)"
    )
    print(
        f"worker peak RSS {rss_mb(pids['worker'], 'VmHWM'):.0f} MB, "
        f"API peak RSS {rss_mb(pids['api'], 'VmHWM'):.0f} MB"
    )


async def fairness(base: str, key: str, pids: dict[str, int], args: argparse.Namespace) -> None:
    """A small run submitted while a large one is well under way: when does it get going?"""
    del pids
    async with httpx.AsyncClient(base_url=base, headers={"x-api-key": key}, timeout=120) as client:
        agent_id, big_dataset = await prepare(client, args.agent_url, args.cases)
        _, small_dataset = await prepare(client, args.agent_url, 20)
        big = await start(client, big_dataset, agent_id, args.concurrency)
        while (await run_now(client, big["run_id"]))["counts"]["done"] < 500:
            await asyncio.sleep(0.1)
        submitted = time.perf_counter()
        small = await start(client, small_dataset, agent_id, 20)
        while (await run_now(client, small["run_id"]))["counts"]["done"] == 0:
            await asyncio.sleep(0.02)
        first_s = time.perf_counter() - submitted
        _, small_wall = await follow(client, small)
        big_done = (await run_now(client, big["run_id"]))["counts"]["done"]
        await client.post(f"/api/v1/eval-runs/{big['run_id']}/cancel")
    print(
        f"a 20-case run submitted while a {args.cases:,}-case run had {big_done:,} results: "
        f"first result after {first_s:.2f} s (target 5 s), done after "
        f"{first_s + small_wall:.2f} s"
    )


async def start(
    client: httpx.AsyncClient, dataset_id: str, agent_id: str, concurrency: int
) -> dict[str, Any]:
    body = {"dataset_id": dataset_id, "agent_id": agent_id, "concurrency": concurrency}
    run: dict[str, Any] = (await client.post("/api/v1/eval-runs", json=body)).json()
    return run


async def run_now(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    run: dict[str, Any] = (await client.get(f"/api/v1/eval-runs/{run_id}")).json()
    return run


async def follow(client: httpx.AsyncClient, run: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """Long-poll a run to its end; the final run and the seconds it took from now."""
    started = time.perf_counter()
    while run["status"] not in ("completed", "cancelled", "failed"):
        run = (await client.get(f"/api/v1/eval-runs/{run['run_id']}", params={"wait_s": 30})).json()
    return run, time.perf_counter() - started


async def longpoll(base: str, key: str, pids: dict[str, int], args: argparse.Namespace) -> None:
    del pids
    limits = httpx.Limits(max_connections=args.clients + 10)
    async with httpx.AsyncClient(
        base_url=base, headers={"x-api-key": key}, timeout=120, limits=limits
    ) as client:
        agent_id, dataset_id = await prepare(client, args.agent_url, args.cases)
        run = (
            await client.post(
                "/api/v1/eval-runs",
                json={"dataset_id": dataset_id, "agent_id": agent_id, "concurrency": 10},
            )
        ).json()
        answered_at: list[float] = []
        path = f"/api/v1/eval-runs/{run['run_id']}?wait_s=60"
        host, port = base.removeprefix("http://").split(":")
        waiters = [
            asyncio.create_task(raw_get(host, int(port), path, key, answered_at))
            for _ in range(args.clients)
        ]
        await asyncio.sleep(1.0)
        held = await database_connections(args.database_url)
        await asyncio.gather(*waiters)
        final = (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()
    finished = dt.datetime.fromisoformat(final["finished_at"]).timestamp()
    lags = sorted(at - finished for at in answered_at)
    print(
        f"{args.clients} long-polls on one run: last answered {lags[-1] * 1000:.0f} ms after "
        f"the run completed (median {lags[len(lags) // 2] * 1000:.0f} ms; target <= 250 ms)"
    )
    print(
        f"database connections open while they waited: {held} (the API's pool and one "
        f"LISTEN connection, plus the worker's; not one per client)"
    )


async def raw_get(host: str, port: int, path: str, key: str, answered_at: list[float]) -> None:
    """One long-poll over a bare socket: a client that costs almost nothing per answer, so the
    figure is the server's."""
    reader, writer = await asyncio.open_connection(host, port)
    request = f"GET {path} HTTP/1.1\r\nhost: {host}\r\nx-api-key: {key}\r\n\r\n"
    writer.write(request.encode())
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )  # fmt: skip
    body = await reader.readexactly(length)
    answered_at.append(time.time())
    writer.close()
    assert b'"status":"completed"' in body, body[:200]


async def database_connections(database_url: str) -> int:
    connection = await asyncpg.connect(database_url)
    try:
        count: int = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        )
        return count - 1  # this one
    finally:
        await connection.close()


SCENARIOS = {
    "throughput": dict(cases=10_000, delay_ms=50, concurrency=200, worker_concurrency=200),
    "slow": dict(cases=10_000, delay_ms=2000, concurrency=1000, worker_concurrency=1000),
    # Long enough (about 10 s) that every client is waiting before the run ends.
    "longpoll": dict(cases=200, delay_ms=500, concurrency=10, worker_concurrency=50, clients=500),
    "memory": dict(cases=100_000, delay_ms=0, concurrency=200, worker_concurrency=200),
    "fairness": dict(cases=100_000, delay_ms=50, concurrency=200, worker_concurrency=200),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--cases", type=int)
    parser.add_argument("--clients", type=int)
    args = parser.parse_args()
    for name, value in SCENARIOS[args.scenario].items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        args.database_url = database_url
        env = {
            "DATABASE_URL": database_url, "REDIS_URL": redis_url,
            "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
        }  # fmt: skip
        try:
            with (
                delayed_agent(args.delay_ms) as agent_url,
                api_process(database_url, redis_url, env) as (base_url, api_pid),
                worker_process(env, args.worker_concurrency) as worker_pid,
            ):
                args.agent_url = agent_url
                pids = {"api": api_pid, "worker": worker_pid}
                scenario = {"longpoll": longpoll, "fairness": fairness}.get(
                    args.scenario, throughput
                )
                asyncio.run(scenario(base_url, new_key(database_url), pids, args))
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
