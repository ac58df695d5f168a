"""Benchmark: agent calls per second and client CPU per call through one shared AgentClient.

Run: .venv/bin/python tests/perf/bench_agent_client.py [--calls N] [--concurrency C]
     [--profile tottime|cumulative]
The fake agent runs in a separate process on 127.0.0.1 so its CPU is not counted; the figures
are the client process's. Target: 1,000+ calls/s at 200 concurrent calls, well under 1 ms CPU
per call.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import pstats
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from app.agents import AgentClient, AgentTarget

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def fast_agent_process() -> Iterator[str]:
    """The fast fake agent in a child process; yields its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.agent_servers"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/agent"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def call_many(client: AgentClient, target: AgentTarget, calls: int, concurrency: int) -> int:
    """Make `calls` calls with `concurrency` in flight; the number that failed."""
    remaining = iter(range(calls))
    failures = 0

    async def caller() -> None:
        nonlocal failures
        for index in remaining:
            body = {"input": f"refund order {index}", "source": "agentlasso-test", "trial": 1}
            result = await client.call(target, body)
            failures += result.error is not None

    await asyncio.gather(*(caller() for _ in range(concurrency)))
    return failures


async def benchmark(url: str, calls: int, concurrency: int, profile: str | None) -> None:
    target = AgentTarget(url=url, headers={"authorization": "Bearer bench"}, timeout_s=30.0)
    async with AgentClient(max_connections=concurrency, allow_private=True) as client:
        await call_many(client, target, concurrency * 2, concurrency)  # open the connections
        profiler = cProfile.Profile() if profile else None
        cpu_started, wall_started = time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        failures = await call_many(client, target, calls, concurrency)
        if profiler:
            profiler.disable()
        cpu_s, wall_s = time.process_time() - cpu_started, time.perf_counter() - wall_started
    print(f"{calls} calls at concurrency {concurrency}: {failures} failed")
    print(f"{calls / wall_s:,.0f} calls/s, {cpu_s * 1000 / calls:.3f} ms client CPU per call")
    if profiler:
        pstats.Stats(profiler).sort_stats(profile).print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--profile", choices=("tottime", "cumulative"), help="print a profile")
    args = parser.parse_args()
    with fast_agent_process() as url:
        asyncio.run(benchmark(url, args.calls, args.concurrency, args.profile))


if __name__ == "__main__":
    main()
