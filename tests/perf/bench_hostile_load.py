"""Another project's requests and run beside hostile traces and hostile agent answers.

    PYTHONPATH=. .venv/bin/python -m tests.perf.bench_hostile_load [--seconds 60]
        [--flood-mb 1024] [--only traces|agents]

Real API, worker and fake-agent processes on 127.0.0.1. For --seconds an attacker project
sends hostile OTLP traces (value bombs in JSON and protobuf, deep nesting, a huge attribute,
many one-span requests to one trace) and invokes agents it registered whose answers attack
header parsing (tests/support/hostile_agent.py: 1 GB of headers, 100,000 headers, one 32 MB
header, headers a byte every half second), and runs server-mode runs against the floods.
Meanwhile another project's small GETs are timed from a process of their own, and its small
server-mode run (20 cases, concurrency 5, an agent answering in 50 ms) is timed against the
same run on a quiet platform. The API's and the worker's memory and event-loop lag (their
/metrics gauge) are sampled throughout. A process past 2.5 GB ends the attack early.
`--only` sends only one of the two attacks.

The bar: the other project's small GET p99 < 100 ms; API and worker memory each < 400 MB;
event-loop lag < 100 ms; the small run at its agent's speed (within 1 s of its quiet time).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx

from tests.perf.bench_fairness import REFUND_CHECK, dataset_with
from tests.perf.bench_hostile import percentiles, timed_elsewhere
from tests.perf.harness import delayed_agent, new_key, rss_mb, server_urls, worker_process
from tests.support.databases import drop_database, fresh_database
from tests.support.otlp import SpanSpec, new_span_id, new_trace_id, protobuf_request
from tests.support.processes import ROOT, SECRET_KEY, api_process, free_port

HOSTILE_PATHS = ("/header-bytes", "/header-count", "/huge-header", "/slow-headers")
SAFETY_MB = 2_500
JSON = {"content-type": "application/json", "content-encoding": "gzip"}
PROTOBUF = {"content-type": "application/x-protobuf", "content-encoding": "gzip"}


def hostile_traces() -> list[tuple[str, bytes, dict[str, str]]]:
    """The requests of one round of the trace attack, gzipped as exporters send them."""
    span = b'{"traceId":"%s","spanId":"%s","name":"s","attributes":[{"key":"a","value":%s}]}'

    def json_body(value: bytes) -> bytes:
        one = span % (new_trace_id().encode(), new_span_id().encode(), value)
        return gzip.compress(b'{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}' % one)

    bomb = b'{"arrayValue":{"values":[%s]}}' % b",".join([b"{}"] * 11_000_000)
    deep = b'{"arrayValue":{"values":[' * 5_000 + b"{}" + b"]}}" * 5_000
    values = [SpanSpec(new_trace_id(), new_span_id(), "s", 0, 1,
                       attributes={f"a{n}": [""] * 1_000 for n in range(120)})]  # fmt: skip
    huge = [SpanSpec(new_trace_id(), new_span_id(), "s", 0, 1, attributes={"a": "h" * 30_000_000})]
    return [
        ("json value bomb (11 M values)", json_body(bomb), JSON),
        ("json nested 5,000 deep", json_body(deep), JSON),
        ("protobuf 120,000 values", gzip.compress(protobuf_request(values)), PROTOBUF),
        ("protobuf 30 MB attribute", gzip.compress(protobuf_request(huge)), PROTOBUF),
    ]


async def trace_attack(http: httpx.AsyncClient, stop: asyncio.Event, seen: dict[str, Any]) -> None:
    """The hostile traces in turn, then a burst of one-span requests to one trace."""
    requests = await asyncio.to_thread(hostile_traces)
    one_trace, parent = new_trace_id(), new_span_id()
    seen["one_trace"] = one_trace
    while not stop.is_set():
        for name, body, headers in requests:
            answer = await http.post("/v1/traces", content=body, headers=headers)
            seen.setdefault(name, []).append(answer.status_code)
        for _ in range(50):
            spans = [SpanSpec(one_trace, new_span_id(), "small", 0, 1, parent)]
            answer = await http.post(
                "/v1/traces",
                content=protobuf_request(spans),
                headers={"content-type": "application/x-protobuf"},
            )
            seen.setdefault("one-span requests to one trace", []).append(answer.status_code)


async def invoke_attack(
    http: httpx.AsyncClient, agent_id: str, stop: asyncio.Event, seen: dict[str, Any]
) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        try:
            answer = await http.post(f"/api/v1/agents/{agent_id}/invoke", json={"input": "hi"})
            outcome = f"{answer.status_code} {str(answer.json().get('error'))[:60]}"
        except httpx.HTTPError as exc:
            outcome = type(exc).__name__
        seen.setdefault(agent_id, []).append((outcome, time.perf_counter() - started))


async def small_run(http: httpx.AsyncClient, dataset_id: str, agent_id: str) -> tuple[float, str]:
    """The other project's run: its wall time and final status."""
    started = time.perf_counter()
    body = {"dataset_id": dataset_id, "agent_id": agent_id, "concurrency": 5}
    run = (await http.post("/api/v1/eval-runs", json=body)).json()
    status = "running"
    while status in ("queued", "running") and time.perf_counter() - started < 90:
        answer = await http.get(f"/api/v1/eval-runs/{run['run_id']}", params={"wait_s": 20})
        status = answer.json()["status"]
    return time.perf_counter() - started, status


class Samples:
    """The processes' memory and event-loop lag, sampled until stopped."""

    def __init__(self, pids: dict[str, int], metrics: dict[str, str]) -> None:
        self.pids, self.metrics = pids, metrics
        self.rss: dict[str, float] = dict.fromkeys(pids, 0.0)
        self.lag: dict[str, float] = dict.fromkeys(pids, 0.0)
        self.quiet_lag: dict[str, float] = dict.fromkeys(pids, 0.0)

    async def quiet(self) -> None:
        """The lag gauges before the attack (the worst of their last 15 s): the machine's own."""
        async with httpx.AsyncClient(timeout=30) as http:
            for name, url in self.metrics.items():
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    self.quiet_lag[name] = _lag_s(await http.get(url))

    async def memory(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            for name, pid in self.pids.items():
                with contextlib.suppress(OSError, RuntimeError):
                    self.rss[name] = max(self.rss[name], rss_mb(pid))
            if max(self.rss.values()) > SAFETY_MB:
                print(f"stopping early: a process passed {SAFETY_MB} MB", flush=True)
                stop.set()
            await asyncio.sleep(0.2)

    async def loop_lag(self, stop: asyncio.Event) -> None:
        async with httpx.AsyncClient(timeout=30) as http:
            while not stop.is_set():
                for name, url in self.metrics.items():
                    with contextlib.suppress(httpx.HTTPError, ValueError):
                        self.lag[name] = max(self.lag[name], _lag_s(await http.get(url)))
                await asyncio.sleep(1)


def _lag_s(answer: httpx.Response) -> float:
    for line in answer.text.splitlines():
        if line.startswith("agentlasso_event_loop_lag_seconds "):
            return float(line.split()[1])
    raise ValueError("no event-loop lag gauge")


async def scenario(
    base: str,
    keys: tuple[str, str],
    samples: Samples,
    agents: tuple[str, str],
    args: argparse.Namespace,
) -> None:
    hostile_url, fast_url = agents
    attacker = httpx.AsyncClient(base_url=base, headers={"x-api-key": keys[0]}, timeout=120)
    victim = httpx.AsyncClient(base_url=base, headers={"x-api-key": keys[1]}, timeout=120)
    async with attacker, victim:
        fast = (await victim.post("/api/v1/agents", json={"name": "f", "url": fast_url})).json()
        small = await dataset_with(victim, 20, [REFUND_CHECK])
        await small_run(victim, small, fast["id"])  # the worker warmed up
        quiet_s, _ = await small_run(victim, small, fast["id"])
        await samples.quiet()
        hostile = {}
        for path in HOSTILE_PATHS:
            body = {"name": path, "url": hostile_url + path, "timeout_s": 10}
            hostile[path] = (await attacker.post("/api/v1/agents", json=body)).json()["id"]
        stop = asyncio.Event()
        seen: dict[str, Any] = {}
        tasks = [
            asyncio.create_task(samples.memory(stop)),
            asyncio.create_task(samples.loop_lag(stop)),
        ]
        runs = []
        if args.only != "agents":
            tasks.append(asyncio.create_task(trace_attack(attacker, stop, seen)))
        if args.only != "traces":
            runs = await flood_runs(attacker, hostile)
            tasks += [asyncio.create_task(invoke_attack(attacker, hostile[path], stop, seen))
                      for path in hostile]  # fmt: skip
        seconds = args.seconds
        with timed_elsewhere(base, keys[1]) as gets:
            await asyncio.wait([asyncio.create_task(stop.wait())], timeout=seconds / 3)
            loaded_s, loaded_status = await small_run(victim, small, fast["id"])
            await asyncio.wait([asyncio.create_task(stop.wait())], timeout=seconds * 2 / 3)
            stop.set()
        await asyncio.wait(tasks, timeout=60)
        for run_id in runs:
            await attacker.post(f"/api/v1/eval-runs/{run_id}/cancel")
        trace = await attacker.get(f"/api/v1/traces/{seen.get('one_trace')}")
    report(seen, hostile, gets, samples, (quiet_s, loaded_s, loaded_status), trace)


async def flood_runs(attacker: httpx.AsyncClient, hostile: dict[str, str]) -> list[str]:
    """Server-mode runs of the attacker against two of its floods: the worker's calls."""
    flood_cases = await dataset_with(attacker, 8, [REFUND_CHECK])
    return [
        (await attacker.post("/api/v1/eval-runs", json={
            "dataset_id": flood_cases, "agent_id": hostile[path], "concurrency": 4,
        })).json()["run_id"]
        for path in ("/header-bytes", "/huge-header")
    ]  # fmt: skip


def report(
    seen: dict[str, Any],
    hostile: dict[str, str],
    gets: dict[str, list[float]],
    samples: Samples,
    runs: tuple[float, float, str],
    trace: httpx.Response,
) -> None:
    for name, codes in seen.items():
        if isinstance(codes, list) and codes and isinstance(codes[0], int):
            print(f"traces, {name}: {len(codes)} sent, answers {sorted(set(codes))}")
    for path, agent_id in hostile.items():
        calls = seen.get(agent_id, [])
        worst = max((taken for _, taken in calls), default=0.0)
        outcomes = sorted({outcome for outcome, _ in calls})[:3]
        print(f"invoke {path}: {len(calls)} calls, slowest {worst:.1f} s, {outcomes}")
    if trace.status_code == 200:
        print(f"the one trace sent span by span holds {trace.json()['span_count']} spans")
    quiet_s, loaded_s, status = runs
    p99 = {path: _p99(taken) for path, taken in gets.items()}
    for path, taken in gets.items():
        print(f"other project's GET {path}: {len(taken)} requests, {percentiles(taken)}")
    print(f"other project's 20-case run: {quiet_s:.2f} s quiet, {loaded_s:.2f} s under load "
          f"({status}); its agent answers in 50 ms")  # fmt: skip
    print(f"peak memory: API {samples.rss['api']:.0f} MB, worker {samples.rss['worker']:.0f} MB")
    print(f"worst event-loop lag: API {samples.lag['api'] * 1000:.0f} ms, "
          f"worker {samples.lag['worker'] * 1000:.0f} ms (before the attack: API "
          f"{samples.quiet_lag['api'] * 1000:.0f} ms, worker "
          f"{samples.quiet_lag['worker'] * 1000:.0f} ms)")  # fmt: skip
    bar = {
        "small GET p99 < 100 ms": all(value < 100 for value in p99.values()),
        "API and worker memory < 400 MB": max(samples.rss.values()) < 400,
        "event-loop lag < 100 ms": max(samples.lag.values()) < 0.1,
        "small run at its agent's speed (within 1 s of quiet)": status == "completed"
        and loaded_s < quiet_s + 1,
    }
    for name, met in bar.items():
        print(f"{'PASS' if met else 'FAIL'}  {name}")


def _p99(taken: list[float]) -> float:
    ordered = sorted(taken)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


@contextlib.contextmanager
def hostile_agent(flood_mb: int) -> Iterator[str]:
    """tests/support/hostile_agent.py in its own process; yields its base URL."""
    argv = [sys.executable, "-m", "tests.support.hostile_agent", str(flood_mb)]
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{int(process.stdout.readline())}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--flood-mb", type=int, default=1024)
    parser.add_argument("--only", choices=["traces", "agents"])
    args = parser.parse_args()
    with (
        server_urls() as (postgres_url, redis_url),
        hostile_agent(args.flood_mb) as hostile_url,
        delayed_agent(50) as fast_url,
    ):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        metrics_port = free_port()
        env = {
            "DATABASE_URL": database_url, "REDIS_URL": redis_url,
            "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
            "AGENTLASSO_METRICS_PORT": str(metrics_port), "AGENTLASSO_METRICS_HOST": "127.0.0.1",
        }  # fmt: skip
        try:
            with (
                api_process(database_url, redis_url, env) as (base_url, api_pid),
                worker_process(env, 100) as worker_pid,
            ):
                keys = (new_key(database_url), new_key(database_url))
                samples = Samples(
                    {"api": api_pid, "worker": worker_pid},
                    {"api": f"{base_url}/metrics",
                     "worker": f"http://127.0.0.1:{metrics_port}/metrics"},
                )  # fmt: skip
                agents = (hostile_url, fast_url)
                asyncio.run(scenario(base_url, keys, samples, agents, args))
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
