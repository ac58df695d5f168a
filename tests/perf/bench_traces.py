"""Trace ingestion under load: OTLP/HTTP into one `agentlasso api` process for a minute.

    PYTHONPATH=. python -m tests.perf.bench_traces [--spans-per-s 10000] [--seconds 60]

A sender process posts protobuf requests of 500 GenAI spans (100 five-span conversations) at
the target rate; meanwhile this process times a small authenticated GET every 50 ms and
samples the API's and the worker's memory. Afterwards it waits for the worker to read every
span, then times searches over everything ingested. Prints each figure beside its target.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import time
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.perf.harness import new_key, rss_mb, server_urls, worker_process
from tests.support.databases import drop_database, fresh_database
from tests.support.otlp import protobuf_request, refund_conversation
from tests.support.processes import SECRET_KEY, api_process

SPANS_PER_REQUEST = 500
PROBE_EVERY_S = 0.05
SEARCH_ROUNDS = 40


class RequestBodies:
    """Protobuf requests of SPANS_PER_REQUEST spans each (conversations of five), every trace
    id new: one request is built once, then given fresh trace ids for each use."""

    def __init__(self) -> None:
        conversations = SPANS_PER_REQUEST // 5
        spans = [s for _ in range(conversations) for s in refund_conversation()]
        self.request = ExportTraceServiceRequest.FromString(protobuf_request(spans))
        self.spans = list(self.request.resource_spans[0].scope_spans[0].spans)

    def next(self) -> bytes:
        for first in range(0, len(self.spans), 5):
            trace_id = os.urandom(16)
            for span in self.spans[first : first + 5]:
                span.trace_id = trace_id
        return self.request.SerializeToString()


def send(base_url: str, key: str, spans_per_s: int, seconds: int, results: Any) -> None:
    """The sender process: post at the target rate for `seconds`; report what was accepted."""
    rate = spans_per_s / SPANS_PER_REQUEST
    total = int(rate * seconds)
    bodies = RequestBodies()
    headers = {"x-api-key": key, "content-type": "application/x-protobuf"}
    latencies: list[float] = []
    statuses: dict[int, int] = {}

    async def run() -> None:
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as client:
            start = time.perf_counter()
            pending = set()
            for number in range(total):
                due = start + number / rate
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                pending.add(asyncio.create_task(post(client, bodies.next())))
                pending = {task for task in pending if not task.done()}
            await asyncio.gather(*pending)
            results.put((time.perf_counter() - start, latencies, statuses))

    async def post(client: httpx.AsyncClient, body: bytes) -> None:
        began = time.perf_counter()
        response = await client.post("/v1/traces", content=body)
        latencies.append((time.perf_counter() - began) * 1000)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    asyncio.run(run())


async def probe(base_url: str, key: str, until: float) -> list[float]:
    """A small authenticated GET every PROBE_EVERY_S until `until`; each one's ms."""
    taken = []
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}) as client:
        while time.perf_counter() < until:
            began = time.perf_counter()
            response = await client.get("/api/v1/trace-settings")
            assert response.status_code == 200, response.text
            taken.append((time.perf_counter() - began) * 1000)
            await asyncio.sleep(max(0.0, PROBE_EVERY_S - (time.perf_counter() - began)))
    return taken


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


async def memory_samples(pids: dict[str, int], until: float) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in pids}
    while time.perf_counter() < until:
        for name, pid in pids.items():
            samples[name].append(rss_mb(pid))
        await asyncio.sleep(5)
    return samples


async def drained(base_url: str, key: str, spans: int, timeout_s: float) -> float:
    """Seconds until every sent trace is listed whole (the worker has read everything)."""
    began = time.perf_counter()
    import asyncpg

    url = os.environ["BENCH_DATABASE_URL"]
    connection = await asyncpg.connect(url)
    try:
        while time.perf_counter() - began < timeout_s:
            waiting = await connection.fetchval("SELECT count(*) FROM trace_batches")
            stored = await connection.fetchval("SELECT count(*) FROM trace_spans")
            if waiting == 0 and stored >= spans:
                return time.perf_counter() - began
            await asyncio.sleep(0.5)
    finally:
        await connection.close()
    return float("nan")


def searches(base_url: str, key: str) -> None:
    """Time searches over everything ingested: a page of 50, and a page of 1,000."""
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=30) as client:
        for label, params in (
            ("list, newest 50", {"limit": 50}),
            ("search 'refund order' (matches all), 50", {"q": "refund order", "limit": 50}),
            ("search 'refund order', 1,000 traces", {"q": "refund order", "limit": 1000}),
            ("search a rare phrase (no match)", {"q": "zebra crossing", "limit": 50}),
            ("tool stripe.refund and errors only, 50",
             {"tool": "stripe.refund", "errors_only": "true", "limit": 50}),
        ):  # fmt: skip
            began = time.perf_counter()
            assert client.get("/api/v1/traces", params=params).status_code == 200
            first_ms = (time.perf_counter() - began) * 1000
            taken = []
            for _ in range(SEARCH_ROUNDS):
                began = time.perf_counter()
                response = client.get("/api/v1/traces", params=params)
                taken.append((time.perf_counter() - began) * 1000)
                assert response.status_code == 200, response.text
            print(
                f"  {label}: p50 {statistics.median(taken):.1f} ms, "
                f"p99 {percentile(taken, 0.99):.1f} ms ({len(response.json()['items'])} items; "
                f"the first, on pages not yet read since the load: {first_ms:.0f} ms)"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans-per-s", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=60)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        os.environ["BENCH_DATABASE_URL"] = database_url
        env = {
            "DATABASE_URL": database_url, "REDIS_URL": redis_url,
            "AGENTLASSO_SECRET_KEY": SECRET_KEY,
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
        }  # fmt: skip
        try:
            with (
                api_process(database_url, redis_url, env) as (base_url, api_pid),
                worker_process(env, 10) as worker_pid,
            ):
                bench(base_url, new_key(database_url), args, {"api": api_pid, "worker": worker_pid})
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


def bench(base_url: str, key: str, args: argparse.Namespace, pids: dict[str, int]) -> None:
    results: Any = multiprocessing.Queue()
    sender = multiprocessing.Process(
        target=send, args=(base_url, key, args.spans_per_s, args.seconds, results)
    )
    print(f"sending {args.spans_per_s} spans/s for {args.seconds} s "
          f"({SPANS_PER_REQUEST} spans a request) to one API process")  # fmt: skip
    sender.start()
    elapsed, latencies, statuses = None, [], {}

    async def measure() -> tuple[list[float], dict[str, list[float]]]:
        until = time.perf_counter() + args.seconds + 1
        return await asyncio.gather(probe(base_url, key, until), memory_samples(pids, until))

    probes, memory = asyncio.run(measure())
    elapsed, latencies, statuses = results.get()
    sender.join()
    sent = sum(statuses.values()) * SPANS_PER_REQUEST
    print(f"accepted: {statuses} in {elapsed:.1f} s: {sent / elapsed:,.0f} spans/s "
          f"(target 10,000 sustained)")  # fmt: skip
    print(f"  export POST: p50 {statistics.median(latencies):.1f} ms, "
          f"p99 {percentile(latencies, 0.99):.1f} ms")  # fmt: skip
    print(f"small GET meanwhile ({len(probes)}): p50 {statistics.median(probes):.1f} ms, "
          f"p99 {percentile(probes, 0.99):.1f} ms, max {max(probes):.1f} ms "
          "(target p99 < 50)")  # fmt: skip
    for name, samples in memory.items():
        print(f"  {name} RSS MB every 5 s: {', '.join(f'{mb:.0f}' for mb in samples)}")
    waited = asyncio.run(drained(base_url, key, sent, timeout_s=600))
    print(f"worker read every span {waited:.1f} s after the sending ended")
    for name, pid in pids.items():
        print(f"  {name} RSS after: {rss_mb(pid):.0f} MB")
    print("searches over everything ingested, right after the load (target < 50 ms):")
    searches(base_url, key)
    asyncio.run(vacuum(os.environ["BENCH_DATABASE_URL"]))
    print("the same after VACUUM ANALYZE of traces (what autovacuum does after a load):")
    searches(base_url, key)


async def vacuum(database_url: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("VACUUM ANALYZE traces")
    finally:
        await connection.close()


if __name__ == "__main__":
    main()
