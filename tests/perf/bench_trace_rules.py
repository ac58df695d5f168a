"""A trace rule of six deterministic checks on every trace, under ingestion at 10,000 spans/s.

    PYTHONPATH=. python -m tests.perf.bench_trace_rules [--spans-per-s 10000] [--seconds 60]
        [--workers 1] [--settle-s 5]

The sender of tests/perf/bench_traces.py posts protobuf requests of 500 spans (100 five-span
conversations, each a new trace) at the target rate to one `agentlasso api` process, while
worker processes read them and grade each one by the rule once it has been quiet for the
settle time. Meanwhile a small authenticated GET is timed every 50 ms. Afterwards: how long
after the last trace became due (the end of sending plus the settle time) the rule had graded
every trace, and the rule's grading rate. Prints each figure beside its target.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import statistics
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from tests.perf.bench_traces import SPANS_PER_REQUEST, percentile, probe, send
from tests.perf.harness import new_key, server_urls, worker_process
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import SECRET_KEY, api_process

# Six deterministic checks, of the kinds a production rule holds, on the refund conversation.
SIX_CHECKS = [
    {"type": "tool_called", "tool": "orders.lookup"},
    {"type": "tool_called", "tool": "stripe.refund"},
    {"type": "tool_order", "tools": ["orders.lookup", "stripe.refund"]},
    {"type": "tool_not_called", "tool": "accounts.delete"},
    {"type": "output_contains", "value": "refund"},
    {"type": "output_not_contains", "value": r"\bguarantee[ds]?\b", "regex": True},
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans-per-s", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--settle-s", type=float, default=5.0)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        env = {
            "DATABASE_URL": database_url, "REDIS_URL": redis_url,
            "AGENTLASSO_SECRET_KEY": SECRET_KEY,
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
            "AGENTLASSO_TRACE_SETTLE_S": str(args.settle_s),
        }  # fmt: skip
        try:
            with contextlib.ExitStack() as stack:
                base_url, _api_pid = stack.enter_context(api_process(database_url, redis_url, env))
                for number in range(args.workers):
                    log = Path(f"/tmp/bench-trace-rules-worker-{number}.log")
                    stack.enter_context(worker_process(env, 10, log))
                bench(base_url, new_key(database_url), database_url, args)
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


def bench(base_url: str, key: str, database_url: str, args: argparse.Namespace) -> None:
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}) as http:
        rule = http.post("/api/v1/trace-rules", json={"name": "refunds", "checks": SIX_CHECKS})
        assert rule.status_code == 201, rule.text
    results: Any = multiprocessing.Queue()
    sender = multiprocessing.Process(
        target=send, args=(base_url, key, args.spans_per_s, args.seconds, results)
    )
    print(f"sending {args.spans_per_s} spans/s for {args.seconds} s to one API process; "
          f"{args.workers} worker(s); a rule of {len(SIX_CHECKS)} checks on every trace; "
          f"settle {args.settle_s:g} s")  # fmt: skip
    sender.start()
    probes = asyncio.run(probe(base_url, key, time.perf_counter() + args.seconds + 1))
    elapsed, latencies, statuses = results.get()
    ended = time.perf_counter()
    sender.join()
    traces = sum(statuses.values()) * SPANS_PER_REQUEST // 5
    print(f"accepted: {statuses} in {elapsed:.1f} s: "
          f"{traces * 5 / elapsed:,.0f} spans/s (target 10,000 sustained)")  # fmt: skip
    print(f"  export POST: p50 {statistics.median(latencies):.1f} ms, "
          f"p99 {percentile(latencies, 0.99):.1f} ms")  # fmt: skip
    print(f"small GET meanwhile ({len(probes)}): p50 {statistics.median(probes):.1f} ms, "
          f"p99 {percentile(probes, 0.99):.1f} ms (target p99 < 50)")  # fmt: skip
    graded_at_end, done_s = asyncio.run(graded(database_url, traces, ended, args.settle_s))
    print(f"graded by the end of sending: {graded_at_end:,} of {traces:,} traces")
    print(f"every trace graded {done_s:.1f} s after the last one was due "
          f"(the end of sending + {args.settle_s:g} s; target within 30 s)")  # fmt: skip
    asyncio.run(report_outcomes(database_url))


async def graded(
    database_url: str, traces: int, ended: float, settle_s: float
) -> tuple[int, float]:
    """Traces graded when sending ended, and seconds from the last one's due time (the end of
    sending plus the settle time) until every trace was graded."""
    connection = await asyncpg.connect(database_url)
    count = "SELECT count(*) FROM trace_evaluations WHERE status = 'graded'"
    try:
        at_end = await connection.fetchval(count)
        while time.perf_counter() - ended < 600:
            if await connection.fetchval(count) >= traces:
                return at_end, time.perf_counter() - ended - settle_s
            await asyncio.sleep(0.25)
    finally:
        await connection.close()
    return at_end, float("nan")


async def report_outcomes(database_url: str) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch(
            "SELECT passed, count(*) FROM trace_evaluations GROUP BY 1 ORDER BY 1"
        )
        print("  outcomes: " + ", ".join(f"passed={r[0]}: {r[1]:,}" for r in rows))
    finally:
        await connection.close()


if __name__ == "__main__":
    main()
