"""Worker pool scaling (issue 15): real API, worker and fake-agent processes on 127.0.0.1.

    .venv/bin/python -m tests.perf.bench_scaling table  # 100,000 cases, 1 s agent, c=4,000
                                                       # over 1, 2 and 4 workers
    .venv/bin/python -m tests.perf.bench_scaling join   # a second worker starts 5 s into such a run
    .venv/bin/python -m tests.perf.bench_scaling leave  # 20,000 cases, one of two workers
                                                       # SIGTERMed 5 s in
    .venv/bin/python -m tests.perf.bench_scaling all    # the three, one after another

    options: [--cases N] [--delay-ms MS] [--concurrency C] [--workers 1,2,4]
             [--project-share S] [--log-dir DIR]

Targets: wall within 1.25 x ideal (cases x delay / concurrency) at 4 workers; a worker takes
work within 5 s of answering /live; after a SIGTERM every case has exactly one result. Each
worker's file descriptors, PostgreSQL and Redis connections are sampled every second, and
PostgreSQL's wait events every 0.2 s (bench_pg_waits): each row prints its top waits and its
PostgreSQL CPU per case.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import asyncpg
import httpx

from agentlasso.config import load_settings
from tests.perf.bench_pg_waits import Waits, sample_waits, top_waits
from tests.perf.bench_server_mode import cpu_s, prepare, run_to_end
from tests.perf.harness import delayed_agent, rss_mb, server_urls
from tests.support.databases import drop_database, fresh_database, new_project_key
from tests.support.processes import ROOT, SECRET_KEY, agentlasso, api_process, free_port
from tests.support.waiting import eventually

EVENT_AFTER_S = 5.0  # when a worker joins or leaves, after the run is created
TAKE_WORK_TARGET_S = 5.0
# Issue 31's bar: wall / ideal by the number of workers.
WALL_TARGETS = {2: 1.25, 4: 1.3}
CLAIMED = 'agentlasso_chunks_claimed_total{kind="agent"}'
DONE = 'agentlasso_chunks_done_total{kind="agent"}'
HANDED_OVER = "agentlasso_lanes_handed_over_total"


class Worker:
    """One `agentlasso worker`, serving /live and /metrics on a loopback port."""

    def __init__(self, env: dict[str, str], concurrency: int, log_dir: str | None) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        argv = agentlasso("worker", "--concurrency", str(concurrency), "--metrics-port", str(port))
        log_path = Path(log_dir, f"worker-{port}.log") if log_dir else Path(os.devnull)
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=log)
        self.pid = self.process.pid

    async def live(self, probe: httpx.AsyncClient) -> float:
        """Wait until GET /live answers 200; the monotonic time it did."""

        async def answers() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker {self.pid} exited with {self.process.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                return (await probe.get(f"{self.url}/live")).status_code == 200
            return False

        await eventually(answers, 60, what=f"worker {self.pid} answering /live")
        return time.monotonic()

    async def metrics(self, probe: httpx.AsyncClient) -> dict[str, float]:
        """Its Prometheus samples, by name and labels as written."""
        text = (await probe.get(f"{self.url}/metrics")).text
        lines = [line for line in text.splitlines() if line and not line.startswith("#")]
        samples = (line.rpartition(" ") for line in lines)
        return {name: float(value) for name, _, value in samples}

    async def first_claim(self, probe: httpx.AsyncClient) -> float:
        """The monotonic time its first claimed chunk shows in /metrics (polled every 0.1 s)."""
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if (await self.metrics(probe)).get(CLAIMED, 0):
                    return time.monotonic()
            await asyncio.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Bench:
    """The processes and settings every scenario shares."""

    args: argparse.Namespace
    client: httpx.AsyncClient  # the API, with the project's key
    probe: httpx.AsyncClient  # the workers' ports
    api_pid: int
    agent_pid: int
    agent_url: str
    database_url: str
    worker_env: dict[str, str]
    ports: dict[str, int]  # PostgreSQL's and Redis's, to tell a worker's sockets apart

    @contextlib.contextmanager
    def workers(self) -> Iterator[Callable[[int], Worker]]:
        """Start workers with the function yielded; every one is stopped at the end."""
        started: list[Worker] = []

        def start(concurrency: int) -> Worker:
            started.append(Worker(self.worker_env, concurrency, self.args.log_dir))
            return started[-1]

        try:
            yield start
        finally:
            for worker in started:
                worker.process.terminate()  # all at once: they shut down side by side
            for worker in started:
                worker.stop()


@dataclass
class Row:
    """One line of the scaling table."""

    workers: int
    each: int
    wall_s: float
    done: int
    status: str
    cpu_s: dict[str, float]
    peaks: list[dict[str, int]]
    rss_mb: list[float]
    chunks_done: list[int]
    handed_over: int
    took_work_s: list[float | None]
    timeline: dict[str, float]
    waits: Waits


# Sockets and CPU, read from /proc.


def remote_ports() -> dict[str, int]:
    """Each TCP socket's inode and the port at its other end."""
    ports = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                ports[fields[9]] = int(fields[2].rsplit(":", 1)[1], 16)
    return ports


def open_files(pid: int, ports: dict[str, int], remote: dict[str, int]) -> dict[str, int]:
    """A process's file descriptors, and its sockets to each of these ports."""
    fds = os.listdir(f"/proc/{pid}/fd")
    far_ends: collections.Counter[int | None] = collections.Counter()
    for fd in fds:
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                far_ends[remote.get(target[8:-1])] += 1
    return {"fds": len(fds), **{name: far_ends[port] for name, port in ports.items()}}


def sample(pids: list[int], ports: dict[str, int]) -> dict[int, dict[str, int]]:
    """open_files of each process still running."""
    remote, figures = remote_ports(), {}
    for pid in pids:
        with contextlib.suppress(OSError):
            figures[pid] = open_files(pid, ports, remote)
    return figures


async def sample_peaks(
    pids: list[int], ports: dict[str, int], peaks: dict[int, collections.Counter[str]]
) -> None:
    """Every second until cancelled: the most of each figure seen, by process."""
    while True:
        for pid, figures in (await asyncio.to_thread(sample, pids, ports)).items():
            for name, value in figures.items():
                peaks[pid][name] = max(peaks[pid][name], value)
        await asyncio.sleep(1)


async def query(database_url: str, sql: str, *params: object) -> list[asyncpg.Record]:
    """One statement, on a connection of its own."""
    connection = await asyncpg.connect(database_url)
    try:
        return await connection.fetch(sql, *params)
    finally:
        await connection.close()


BACKENDS = """
SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
"""


async def cpu_now(bench: Bench, workers: list[Worker]) -> dict[str, dict[int, float]]:
    """CPU seconds used so far, by process, in groups."""
    groups = {
        "api": [bench.api_pid],
        "workers": [worker.pid for worker in workers],
        "postgres": [row["pid"] for row in await query(bench.database_url, BACKENDS)],
        "agent": [bench.agent_pid],
    }
    used: dict[str, dict[int, float]] = {}
    for name, pids in groups.items():
        used[name] = {}
        for pid in pids:
            with contextlib.suppress(OSError):
                used[name][pid] = cpu_s(pid)
    return used


def cpu_between(
    before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]
) -> dict[str, float]:
    """CPU seconds each group used in between (a process new since counts all of its own)."""
    return {
        name: sum(seconds - before[name].get(pid, 0.0) for pid, seconds in pids.items())
        for name, pids in after.items()
    }


def child_pid(marker: str) -> int:
    """The pid of this process's child whose command line holds marker."""
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if parent == os.getpid() and marker in (entry / "cmdline").read_text():
                return int(entry.name)
    raise RuntimeError(f"no child process running {marker}")


# The scenarios.


async def table_row(bench: Bench, count: int) -> Row:
    """One run over `count` workers sharing the run's concurrency."""
    args = bench.args
    # A dataset of its own: a run of one already run would be compared with that run when it
    # completes, which would add to the wall of every row but the first.
    agent_id, dataset_id = await prepare(bench.client, bench.agent_url, args.cases)
    each = args.concurrency // count
    with bench.workers() as start_worker:
        workers = [start_worker(each) for _ in range(count)]
        await asyncio.gather(*(worker.live(bench.probe) for worker in workers))
        pids = [worker.pid for worker in workers]
        peaks: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        sampler = asyncio.create_task(sample_peaks(pids, bench.ports, peaks))
        waits: Waits = collections.Counter()
        waiting = asyncio.create_task(sample_waits(bench.database_url, waits))
        claims = [asyncio.create_task(worker.first_claim(bench.probe)) for worker in workers]
        before = await cpu_now(bench, workers)
        started = time.monotonic()
        run, wall_s = await run_to_end(bench.client, agent_id, dataset_id, args.concurrency)
        cpu = cpu_between(before, await cpu_now(bench, workers))
        sampler.cancel()
        waiting.cancel()
        took = [claim.result() - started if claim.done() else None for claim in claims]
        for claim in claims:
            claim.cancel()
        scraped = [await worker.metrics(bench.probe) for worker in workers]
        rss = [rss_mb(pid, "VmHWM") for pid in pids]
    timeline = dict((await query(bench.database_url, TIMELINE, run["run_id"]))[0])
    return Row(
        workers=count, each=each, wall_s=wall_s, done=run["counts"]["done"],
        status=run["status"], cpu_s=cpu, peaks=[peaks[pid] for pid in pids], rss_mb=rss,
        chunks_done=[int(metrics.get(DONE, 0)) for metrics in scraped],
        handed_over=int(sum(metrics.get(HANDED_OVER, 0) for metrics in scraped)), took_work_s=took,
        timeline={name: float(seconds) for name, seconds in timeline.items()}, waits=waits,
    )  # fmt: skip


async def table(bench: Bench) -> dict[int, Row]:
    args = bench.args
    rows = {}
    for count in args.workers:
        rows[count] = row = await table_row(bench, count)
        print(f"  {count} worker(s): {row.wall_s:.2f} s, {row.done:,} cases, {row.status}")
    print_table(bench, list(rows.values()))
    return rows


def print_table(bench: Bench, rows: list[Row]) -> None:
    args = bench.args
    ideal_s = ideal(args)
    print(
        f"\n{args.cases:,} cases, agent {args.delay_ms:g} ms, run concurrency "
        f"{args.concurrency:,}: ideal {ideal_s:.2f} s\n"
    )
    print(
        "| workers | concurrency each | wall s | cases/s | wall/ideal "
        "| CPU s api / workers / postgres / agent | max fds a worker | max DB conns a worker "
        "| max Redis conns a worker | peak RSS MB a worker | chunks done each "
        "| lanes handed over | took work s (latest) | PG CPU ms a case |"
    )
    print("|---:" * 14 + "|")
    for row in rows:
        cpu = " / ".join(f"{row.cpu_s[name]:.2f}" for name in row.cpu_s)
        took = [s for s in row.took_work_s if s is not None]
        never = len(row.took_work_s) - len(took)
        print(
            f"| {row.workers} | {row.each:,} | {row.wall_s:.2f} | {row.done / row.wall_s:,.0f} "
            f"| {row.wall_s / ideal_s:.2f} | {cpu} "
            f"| {max(peak['fds'] for peak in row.peaks)} "
            f"| {max(peak['db'] for peak in row.peaks)} "
            f"| {max(peak['redis'] for peak in row.peaks)} | {max(row.rss_mb):.0f} "
            f"| {' / '.join(map(str, row.chunks_done))} | {row.handed_over} "
            f"| {max(took, default=0):.2f}{f' ({never} never)' if never else ''} "
            f"| {row.cpu_s['postgres'] * 1000 / max(1, row.done):.3f} |"
        )
    print("\nseconds from the run's creation (the wall adds the POST before it):")
    for row in rows:
        steps = ", ".join(f"{name} {seconds:.2f}" for name, seconds in row.timeline.items())
        print(f"  {row.workers} worker(s): {steps}; wall {row.wall_s:.2f}")
    print_waits(rows)
    print_targets(bench, rows, ideal_s)


def print_waits(rows: list[Row]) -> None:
    """Each row's most seen PostgreSQL waits, and its PostgreSQL CPU per case against 1 worker's."""
    first = rows[0]
    per_case = {row.workers: row.cpu_s["postgres"] / max(1, row.done) for row in rows}
    for row in rows:
        samples = row.waits.get(("samples", ""), 0)
        ratio = per_case[row.workers] / per_case[first.workers] if per_case[first.workers] else 0
        print(
            f"\n{row.workers} worker(s): PostgreSQL CPU {per_case[row.workers] * 1000:.3f} ms a "
            f"case ({ratio:.2f} x {first.workers} worker(s); target <= 1.3 at 4); top waits of "
            f"active backends in {samples} samples of pg_stat_activity:"
        )
        for line in top_waits(row.waits):
            print(f"  {line}")


def print_targets(bench: Bench, rows: list[Row], ideal_s: float) -> None:
    args, settings = bench.args, load_settings()
    widest = max(rows, key=lambda row: row.workers)
    share = args.project_share or settings.project_share
    slots = widest.workers * max(1, int(widest.each * share)) if share < 1 else args.concurrency
    print()
    for row in rows:
        target = WALL_TARGETS.get(row.workers)
        goal = f" (target <= {target})" if target else ""
        print(f"wall/ideal at {row.workers} worker(s): {row.wall_s / ideal_s:.2f}{goal}")
    print(
        f"One project may hold {share:.0%} of a worker's call "
        f"slots: at most {slots:,} of the run's {args.concurrency:,} calls in flight there."
    )
    print(
        f"DB connections a worker: at most AGENTLASSO_DB_POOL_MAX = {settings.db_pool_max} "
        "(docs/guides/operations.md). File descriptors and Redis connections have no documented "
        "bound; a worker's fds are about its agent connections (<= its concurrency) + DB + Redis."
    )
    print(
        "took work: seconds from the run's creation to each worker's first claimed chunk "
        f"(target {TAKE_WORK_TARGET_S:g} s)"
    )


async def join(bench: Bench, rows: dict[int, Row]) -> None:
    """One worker with half the run's concurrency; a second one starts 5 s in."""
    args = bench.args
    agent_id, dataset_id = await prepare(bench.client, bench.agent_url, args.cases)
    half = args.concurrency // 2
    with bench.workers() as start_worker:
        first = start_worker(half)
        await first.live(bench.probe)
        following = asyncio.create_task(
            run_to_end(bench.client, agent_id, dataset_id, args.concurrency)
        )
        await asyncio.sleep(EVENT_AFTER_S)
        if following.done():
            print("join: the run ended before the second worker started; give it more cases")
        second = start_worker(half)
        live_at = await second.live(bench.probe)
        claim = asyncio.create_task(second.first_claim(bench.probe))
        run, wall_s = await following
        took = (
            f"{claim.result() - live_at:.2f} s after it answered /live" if claim.done() else "never"
        )
        claim.cancel()
        first_m, second_m = [await worker.metrics(bench.probe) for worker in (first, second)]
    print(
        f"\njoin: {run['counts']['done']:,} cases at concurrency {args.concurrency:,}, one worker "
        f"of {half:,}; a second of {half:,} started {EVENT_AFTER_S:g} s in claimed its first "
        f"chunk: {took} (target {TAKE_WORK_TARGET_S:g} s)"
    )
    print(
        f"chunks done: first {first_m.get(DONE, 0):,.0f}, second {second_m.get(DONE, 0):,.0f}; "
        f"lanes the first handed over: {first_m.get(HANDED_OVER, 0):,.0f}"
    )
    versus = ", ".join(f"{n} worker(s) {rows[n].wall_s:.2f} s" for n in (1, 2) if n in rows)
    print(
        f"wall {wall_s:.2f} s = {wall_s / ideal(args):.2f} x ideal ({run['status']})"
        + (f"; in the table: {versus}" if versus else "")
    )


async def leave(bench: Bench) -> None:
    """Two workers; one is SIGTERMed 5 s in; is every case answered exactly once?"""
    args = bench.args
    agent_id, dataset_id = await prepare(bench.client, bench.agent_url, args.cases)
    half = args.concurrency // 2
    with bench.workers() as start_worker:
        stays, goes = start_worker(half), start_worker(half)
        await asyncio.gather(stays.live(bench.probe), goes.live(bench.probe))
        started = time.monotonic()
        following = asyncio.create_task(
            run_to_end(bench.client, agent_id, dataset_id, args.concurrency)
        )
        figures = await stop_midway(bench, goes, following, started)
        run, wall_s = await following
        stays_done = (await stays.metrics(bench.probe)).get(DONE, 0)
    check = (await query(bench.database_url, RESULTS_CHECK, run["run_id"]))[0]
    print(
        f"\nleave: {args.cases:,} cases at concurrency {args.concurrency:,} over two workers of "
        f"{half:,}; one SIGTERMed {figures['sent_s']:.1f} s in, holding {figures['held']} "
        f"chunk(s), exited in {figures['exit_s']:.2f} s (code {goes.process.returncode}); "
        f"chunks it still held after: {figures['still_held']}; the ones it held were all done "
        f"{figures['redone_s']:.2f} s after the SIGTERM"
    )
    print(
        f"chunks done: the one that left {figures['done_before']:,.0f} (before its SIGTERM), "
        f"the one that stayed {stays_done:,.0f}; run {run['status']} in {wall_s:.2f} s "
        f"({wall_s / ideal(args):.2f} x ideal)"
    )
    once = check["results"] == check["total"] and not check["repeated"] and not check["missing"]
    print(
        f"every case exactly once: {'yes' if once else 'NO'} ({check['results']:,} results for "
        f"{check['total']:,} cases; {check['repeated']} repeated, {check['missing']} missing)"
    )


async def stop_midway(
    bench: Bench, goes: Worker, following: asyncio.Task[Any], started: float
) -> dict[str, float]:
    """SIGTERM the worker 5 s in, once it holds a chunk (10 s more at most); what followed."""
    await asyncio.sleep(EVENT_AFTER_S)
    while not (held := await chunks_held(bench.database_url, goes.pid)):
        if following.done() or time.monotonic() - started > EVENT_AFTER_S + 10:
            print("leave: the worker held no chunk to hand back; give the run more cases")
            break
        await asyncio.sleep(0.1)
    done_before = (await goes.metrics(bench.probe)).get(DONE, 0)
    sent = time.monotonic()
    exit_s = await sigterm(goes)
    still_held = len(await chunks_held(bench.database_url, goes.pid))
    while not following.done() and await chunks_not_done(bench.database_url, held):
        await asyncio.sleep(0.1)
    return {
        "sent_s": sent - started, "held": len(held), "exit_s": exit_s,
        "still_held": still_held, "redone_s": time.monotonic() - sent, "done_before": done_before,
    }  # fmt: skip


async def sigterm(worker: Worker) -> float:
    """SIGTERM the worker; the seconds it took to exit (killed after 60)."""
    sent = time.monotonic()
    worker.process.send_signal(signal.SIGTERM)
    while worker.process.poll() is None and time.monotonic() - sent < 60:
        await asyncio.sleep(0.02)
    worker.stop()
    return time.monotonic() - sent


async def chunks_held(database_url: str, pid: int) -> list[tuple[UUID, int]]:
    """The chunks PostgreSQL says this worker process holds now."""
    sql = "SELECT run_id, chunk_no FROM run_chunks WHERE state = 'running' AND worker_id LIKE $1"
    return [(row[0], row[1]) for row in await query(database_url, sql, f"%:{pid}:%")]


NOT_DONE = """
SELECT count(*) FROM run_chunks
WHERE (run_id, chunk_no) IN (SELECT * FROM unnest($1::uuid[], $2::int[])) AND state <> 'done'
"""


async def chunks_not_done(database_url: str, chunks: list[tuple[UUID, int]]) -> int:
    """How many of these chunks are not done yet."""
    runs, numbers = zip(*chunks, strict=True) if chunks else ((), ())
    left: int = (await query(database_url, NOT_DONE, runs, numbers))[0][0]
    return left


# Where a run's wall goes, in seconds from its creation (PostgreSQL's clock).
TIMELINE = """
SELECT extract(epoch FROM r.started_at - r.created_at) AS "first chunk started",
       extract(epoch FROM min(c.finished_at) - r.created_at) AS "first chunk done",
       extract(epoch FROM max(c.finished_at) - r.created_at) AS "last chunk done",
       extract(epoch FROM r.finished_at - r.created_at) AS "run finished"
FROM eval_runs r JOIN run_chunks c ON c.run_id = r.id
WHERE r.id = $1
GROUP BY r.id
"""


# Duplicates are impossible with case_results' primary key; looked for all the same.
RESULTS_CHECK = """
SELECT
    (SELECT total FROM eval_runs WHERE id = $1) AS total,
    (SELECT count(*) FROM case_results WHERE run_id = $1) AS results,
    (SELECT count(*) FROM (
        SELECT 1 FROM case_results WHERE run_id = $1
        GROUP BY test_case_id, trial HAVING count(*) <> 1
    ) AS repeated) AS repeated,
    (SELECT count(*) FROM eval_run_cases c WHERE c.run_id = $1 AND NOT EXISTS (
        SELECT 1 FROM case_results r WHERE r.run_id = c.run_id AND r.test_case_id = c.test_case_id
    )) AS missing
"""


def ideal(args: argparse.Namespace) -> float:
    """The run's seconds with all its concurrency busy all the time: cases x delay / concurrency."""
    seconds: float = args.cases * args.delay_ms / 1000 / args.concurrency
    return seconds


async def run_scenarios(args: argparse.Namespace) -> None:
    async with bench_for(args) as bench:
        rows: dict[int, Row] = {}
        if args.scenario in ("table", "all"):
            rows = await table(bench)
        if args.scenario in ("join", "all"):
            await join(bench, rows)
        if args.scenario in ("leave", "all"):
            args.cases = args.leave_cases
            await leave(bench)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.perf.bench_scaling")
    parser.add_argument("scenario", choices=("table", "join", "leave", "all"))
    parser.add_argument("--cases", type=int, help="default 100,000 (leave: 20,000)")
    parser.add_argument("--delay-ms", type=float, default=1000)
    parser.add_argument("--concurrency", type=int, default=4000)
    parser.add_argument("--workers", default="1,2,4", help="worker counts for the table")
    parser.add_argument("--project-share", type=float, help="AGENTLASSO_PROJECT_SHARE for workers")
    parser.add_argument("--log-dir", help="write each worker's log here")
    args = parser.parse_args()
    args.workers = [int(count) for count in args.workers.split(",")]
    args.leave_cases = args.cases or 20_000
    args.cases = args.cases or (20_000 if args.scenario == "leave" else 100_000)
    return args


def main() -> None:
    args = parse_args()
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")
    asyncio.run(run_scenarios(args))


@contextlib.asynccontextmanager
async def bench_for(args: argparse.Namespace) -> AsyncIterator[Bench]:
    """A fresh database, the fake agent and the API, with clients; all gone at the end."""
    with server_urls() as (postgres_url, redis_url):
        database_url = await fresh_database(postgres_url, "agentlasso_bench")
        env = {
            "DATABASE_URL": database_url, "REDIS_URL": redis_url,
            "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
            "AGENTLASSO_QUOTA_RUN_CONCURRENCY": str(args.concurrency),
            "AGENTLASSO_METRICS_HOST": "127.0.0.1",
        }  # fmt: skip
        if args.project_share is not None:
            env["AGENTLASSO_PROJECT_SHARE"] = str(args.project_share)
        try:
            headers = {"x-api-key": await new_project_key(database_url, "bench")}
            with (
                delayed_agent(args.delay_ms) as agent_url,
                api_process(database_url, redis_url, env) as (base_url, api_pid),
            ):
                async with (
                    httpx.AsyncClient(base_url=base_url, headers=headers, timeout=300) as client,
                    httpx.AsyncClient(timeout=10) as probe,
                ):
                    yield Bench(
                        args=args, client=client, probe=probe, api_pid=api_pid,
                        agent_pid=child_pid("tests.perf.delayed_agent"), agent_url=agent_url,
                        database_url=database_url, worker_env={**os.environ, **env},
                        ports={"db": port_of(database_url), "redis": port_of(redis_url)},
                    )  # fmt: skip
        finally:
            await drop_database(postgres_url, database_url)


def port_of(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or {"redis": 6379}.get(parts.scheme, 5432)


if __name__ == "__main__":
    main()
