"""A trace rule of six deterministic checks on every trace, under ingestion at 10,000 spans/s.

    PYTHONPATH=. python -m tests.perf.bench_trace_rules [--spans-per-s 10000] [--seconds 60]
        [--workers 1] [--settle-s 5]

The sender of tests/perf/bench_traces.py posts protobuf requests of 500 spans (100 five-span
conversations, each a new trace) at the target rate to one `agentlasso api` process, while
worker processes read them and grade each one by the rule once it has been quiet for the
settle time. Meanwhile a small authenticated GET is timed every 50 ms. Afterwards it samples,
every second, the inbox of requests not read yet and the rule's own backlog (traces read
but not graded): when reading ended, when grading ended, and how long after the last
trace read was due the rule had graded it. Reading takes at most half of a worker, by design
(workers/trace_reading.py): at 10,000 spans/s on a small machine the inbox, not the rule, is
what takes longest to drain. Prints each figure beside its target.
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
    progress = asyncio.run(sample(database_url, traces, ended))
    print(f"graded by the end of sending: {progress.graded_at_end:,} of {traces:,} traces")
    print(f"every request read (the inbox empty) {progress.read_done or float('nan'):.1f} s "
          "after the sending ended")  # fmt: skip
    print(f"every trace graded {progress.graded_done or float('nan'):.1f} s after the sending "
          f"ended; the rule's own backlog (read, not graded yet) was at most "
          f"{progress.most_behind:,} traces")  # fmt: skip
    if progress.read_done is not None and progress.graded_done is not None:
        # The last traces read went quiet then, and were due once settled.
        lag = max(0.0, progress.graded_done - progress.read_done - args.settle_s)
        print(f"  the rule graded the last trace {lag:.1f} s after it was read and settled "
              "(target: drained within 30 s)")  # fmt: skip
    asyncio.run(report_outcomes(database_url))


# Traces read but not graded yet (those not yet quiet for the settle time among them): the
# rule's own backlog, apart from the inbox of requests no worker has read yet. Counts only: a
# sampler that scanned the traces would itself slow what it measures.
_BACKLOG = """
SELECT (SELECT count(*) FROM trace_batches) AS unread,
       (SELECT count(*) FROM traces) AS read,
       (SELECT count(*) FROM trace_evaluations WHERE status = 'graded') AS graded
"""


class Progress:
    """What the sampler saw: the rule's largest backlog, and when reading and grading ended."""

    def __init__(self) -> None:
        self.most_behind = 0
        self.read_done: float | None = None
        self.graded_done: float | None = None
        self.graded_at_end = 0


async def sample(database_url: str, traces: int, ended: float) -> Progress:
    """Sample the backlogs every half second from the end of sending until all is graded."""
    progress = Progress()
    connection = await asyncpg.connect(database_url)
    try:
        while time.perf_counter() - ended < 900 and progress.graded_done is None:
            row = await connection.fetchrow(_BACKLOG)
            now = time.perf_counter() - ended
            progress.graded_at_end = progress.graded_at_end or row["graded"]
            progress.most_behind = max(progress.most_behind, row["read"] - row["graded"])
            if progress.read_done is None and row["unread"] == 0 and row["read"] >= traces:
                progress.read_done = now
            if row["graded"] >= traces:
                progress.graded_done = now
            await asyncio.sleep(1.0)
    finally:
        await connection.close()
    return progress


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
