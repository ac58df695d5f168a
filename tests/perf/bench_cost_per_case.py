"""Cost per case of a server-mode run, over every process that does its work (issue 15).

    PYTHONPATH=. .venv/bin/python -m tests.perf.bench_cost_per_case [--cases N] [--profile]
        [--gil] [--rate HZ] [--count-queries] [--own-redis] [--agent-max-concurrency N]
        [--json FILE]
    PYTHONPATH=. .venv/bin/python -m tests.perf.bench_cost_per_case --summarise FILE.collapsed \
        [--ms-per-case MS]

The scenario of `bench_server_mode throughput`: 10,000 sample cases (six checks each), a fake
agent answering after 50 ms, concurrency 200, one API process and one worker. It prints the
wall time and cases a second, then CPU per case for the API, the worker, PostgreSQL and Redis,
and their total (user plus system time from /proc); the fake agent's CPU is shown apart and
not counted, and so is what the processes cost a second while idle just before the run (their
duties). Beside that: Redis commands per case (INFO commandstats), PostgreSQL transactions and
rows per case (pg_stat_database, pg_stat_user_tables: the run waits 11 s before and after, as
an idle backend reports its statistics up to 10 s late) and WAL bytes per case.

PostgreSQL's CPU is read from /proc for every process whose name starts with "postgres",
sampled through the run, and split by what it served: the backends of the benchmark's
database by client process (matched through their TCP ports), the server's own processes
(WAL writer, checkpointer, ...: shared with whatever else uses the server), and backends of
other databases (not counted). WAL is the cluster's LSN advance, and the share of it written
by the benchmark's transactions (pg_walinspect, when the server has it).

--count-queries runs the API and the worker with an asyncpg query logger: statements per case
and the client-observed time of each statement text (pg_stat_statements needs a restart to
load; the logger costs a few microseconds a statement). --own-redis gives the run a private
redis-server, so its command counts and CPU are the run's alone. --profile records the worker
and the API with py-spy (200 Hz, Python frames only) into /tmp/agentlasso-profile/: a raw
collapsed file and a speedscope file each, and prints each one's top functions by self and
cumulative time and where the worker's time goes, in shares and in microseconds per case (the
share of the process's measured CPU). With --gil only the samples of the thread holding the
GIL are kept: without it py-spy counts a thread waiting for the GIL (after a send, while the
grading thread runs) as busy, and some idle waits too, which inflates those frames.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import redis.asyncio as aioredis

from tests.perf.harness import imported_dataset, new_key, server_urls
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import ROOT, SECRET_KEY, agentlasso, api_process, free_port

TICKS = os.sysconf("SC_CLK_TCK")
PROFILE_DIR = Path("/tmp/agentlasso-profile")
PY_SPY = Path(sys.executable).with_name("py-spy")
SAMPLE_EVERY_S = 0.2
STATS_LAG_S = 11.0

# Run in the API and worker processes with --count-queries: counts each statement text and
# its client-observed time; SIGUSR2 starts counting afresh, SIGUSR1 writes the counts out.
QUERY_COUNTER = """
import collections, json, os, signal, sys
import asyncpg
counts = collections.Counter()
seconds = collections.Counter()
def logged(record):
    text = " ".join(record.query.split())
    counts[text] += 1
    seconds[text] += record.elapsed
original_init = asyncpg.Connection.__init__
def init(self, *args, **kwargs):
    original_init(self, *args, **kwargs)
    self.add_query_logger(logged)
asyncpg.Connection.__init__ = init
def reset(*_):
    counts.clear()
    seconds.clear()
def dump(*_):
    with open(os.environ["AGENTLASSO_QUERY_COUNTS"], "w") as out:
        json.dump({text: [counts[text], seconds[text]] for text in counts}, out)
signal.signal(signal.SIGUSR2, reset)
signal.signal(signal.SIGUSR1, dump)
from agentlasso.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def cpu_ticks(pid: int) -> int | None:
    """User plus system clock ticks a process has used; None once it is gone."""
    split = user_system_ticks(pid)
    return None if split is None else split[0] + split[1]


def user_system_ticks(pid: int) -> tuple[int, int] | None:
    """User and system clock ticks a process has used; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[11]), int(fields[12])


def postgres_pids() -> list[int]:
    """Every process on this machine whose name starts with "postgres"."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().startswith("postgres"):
                    pids.append(int(entry.name))
    return pids


def socket_owners(pids: dict[str, int]) -> dict[int, str]:
    """The local TCP port of each socket these processes hold, to the process's name."""
    inode_owner: dict[str, str] = {}
    for name, pid in pids.items():
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    if link.startswith("socket:["):
                        inode_owner[link[8:-1]] = name
    owners = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] in inode_owner:
                    owners[int(fields[1].rsplit(":", 1)[1], 16)] = inode_owner[fields[9]]
    return owners


class PostgresCpu:
    """PostgreSQL's CPU during the run, per process, sampled so short-lived backends count."""

    def __init__(self, database: str, clients: dict[str, int]) -> None:
        self.database = database
        self.clients = clients
        self.first: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.kind: dict[int, str] = {}
        self.started = False

    def sample(self, activity: list[asyncpg.Record]) -> None:
        """Read every postgres process's CPU now; classify the ones not seen before."""
        rows = {row["pid"]: row for row in activity}
        owners: dict[int, str] | None = None
        for pid in postgres_pids():
            ticks = cpu_ticks(pid)
            if ticks is None:
                continue
            if pid not in self.first:
                # A backend born during the run spent all of its CPU in the run.
                self.first[pid] = ticks if not self.started else 0
            self.last[pid] = ticks
            if pid not in self.kind or self.kind[pid] == "unknown":
                if owners is None and pid in rows and rows[pid]["client_port"]:
                    owners = socket_owners(self.clients)
                self.kind[pid] = self._kind(rows.get(pid), owners or {})
        self.started = True

    def _kind(self, row: asyncpg.Record | None, owners: dict[int, str]) -> str:
        if row is None:
            return "server: postmaster"  # or the logger: not in pg_stat_activity
        if row["datname"] is None:
            return f"server: {row['backend_type']}"  # WAL writer, checkpointer, launchers
        if row["datname"] != self.database:
            return "other databases"
        if row["backend_type"] != "client backend":
            return f"bench DB {row['backend_type']}"
        return f"bench DB, {owners.get(row['client_port'], 'unknown')}"

    def seconds_by_kind(self) -> dict[str, float]:
        totals: Counter[str] = Counter()
        for pid, last in self.last.items():
            totals[self.kind.get(pid, "unknown")] += (last - self.first[pid]) / TICKS
        return dict(totals)


async def activity(connection: asyncpg.Connection) -> list[asyncpg.Record]:
    return await connection.fetch(
        "SELECT pid, datname, backend_type, client_port FROM pg_stat_activity"
        " WHERE pid <> pg_backend_pid()"
    )


async def sample_postgres(
    connection: asyncpg.Connection, cpu: PostgresCpu, stop: asyncio.Event
) -> None:
    """Sample PostgreSQL's processes until told to stop, and once more then."""
    while True:
        cpu.sample(await activity(connection))
        if stop.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), SAMPLE_EVERY_S)


# --- database and Redis counters -----------------------------------------------------------

_DATABASE_STATS = """
SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, tup_updated,
       tup_deleted, blks_hit, blks_read
FROM pg_stat_database WHERE datname = current_database()
"""
_TABLE_STATS = """
SELECT relname, seq_scan, idx_scan, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del
FROM pg_stat_user_tables
"""
# WAL records of the benchmark database's transactions: those touching one of its relations,
# and every other record (the commit) of the same transactions.
_OUR_WAL = r"""
WITH records AS (
    SELECT xid::text AS xid, resource_manager, record_type, record_length, fpi_length,
           block_ref
    FROM pg_get_wal_records_info($1::text::pg_lsn, $2::text::pg_lsn)
), ours AS (
    SELECT DISTINCT xid FROM records WHERE block_ref LIKE $3 AND xid <> '0'
)
SELECT resource_manager || ' ' || record_type || coalesce(' ' || c.relname, '') AS kind,
       count(*) AS records, sum(record_length) AS bytes, sum(fpi_length) AS fpi_bytes
FROM records
LEFT JOIN pg_class c ON c.relfilenode::text = substring(block_ref from 'rel \d+/\d+/(\d+)')
WHERE block_ref LIKE $3 OR xid IN (SELECT xid FROM ours)
GROUP BY 1 ORDER BY bytes DESC
"""


async def database_counters(connection: asyncpg.Connection) -> dict[str, Any]:
    row = await connection.fetchrow(_DATABASE_STATS)
    tables = {
        row["relname"]: {key: value or 0 for key, value in row.items() if key != "relname"}
        for row in await connection.fetch(_TABLE_STATS)
    }
    return {"database": dict(row or {}), "tables": tables}


def counter_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """after - before, for nested dicts of numbers."""
    return {
        key: counter_delta(before.get(key, {}), value)
        if isinstance(value, dict)
        else value - before.get(key, 0)
        for key, value in after.items()
    }


async def wal_of_run(
    connection: asyncpg.Connection, start: str, end: str
) -> tuple[int, list[asyncpg.Record] | None]:
    """The cluster's WAL bytes between two LSNs, and the benchmark database's records by kind
    (None without pg_walinspect)."""
    total = await connection.fetchval(
        "SELECT pg_wal_lsn_diff($1::text::pg_lsn, $2::text::pg_lsn)", end, start
    )
    try:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    except asyncpg.PostgresError:
        return int(total), None
    oid = await connection.fetchval(
        "SELECT oid FROM pg_database WHERE datname = current_database()"
    )
    flushed = await connection.fetchval("SELECT pg_current_wal_flush_lsn()::text")
    try:
        ours = await connection.fetch(_OUR_WAL, start, min_lsn(end, flushed), f"%rel %/{oid}/%")
    except asyncpg.PostgresError as exc:  # a checkpoint already recycled the segments
        print(f"(WAL records not read: {exc})")
        return int(total), None
    return int(total), ours


def min_lsn(a: str, b: str) -> str:
    def value(lsn: str) -> int:
        high, low = lsn.split("/")
        return (int(high, 16) << 32) + int(low, 16)

    return a if value(a) <= value(b) else b


async def redis_stats(client: aioredis.Redis) -> dict[str, tuple[int, int]]:
    """Each command's calls and server microseconds so far."""
    stats = await client.info("commandstats")
    return {
        name.removeprefix("cmdstat_"): (int(value["calls"]), int(value["usec"]))
        for name, value in stats.items()
    }


# --- processes -----------------------------------------------------------------------------


@contextlib.contextmanager
def agent_process(delay_ms: float) -> Iterator[tuple[str, int]]:
    """The fake agent of tests/perf/delayed_agent.py; yields its URL and pid."""
    argv = [sys.executable, "-m", "tests.perf.delayed_agent", str(delay_ms)]
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{int(process.stdout.readline())}/agent", process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextlib.contextmanager
def worker(env: dict[str, str], concurrency: int, count_queries: bool) -> Iterator[int]:
    """One `agentlasso worker`; yields its pid."""
    argv = agentlasso("worker", "--concurrency", str(concurrency))
    if count_queries:
        argv = [sys.executable, "-c", QUERY_COUNTER, *argv[3:]]
    process = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env}, stderr=subprocess.DEVNULL)
    try:
        yield process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.contextmanager
def own_redis() -> Iterator[str]:
    """A private redis-server without persistence; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextlib.contextmanager
def profiled(
    pids: dict[str, int], directory: Path, rate: int, gil: bool
) -> Iterator[dict[str, Path]]:
    """py-spy recording each process (raw collapsed stacks) until the block ends; with `gil`
    only the samples of the thread holding the GIL (Python's own CPU, not waits for the GIL)."""
    directory.mkdir(parents=True, exist_ok=True)
    suffix = "-gil" if gil else ""
    outputs = {name: directory / f"{name}{suffix}.collapsed.txt" for name in pids}
    options = ["--rate", str(rate), "--format", "raw", "--full-filenames", "--nolineno"]
    options += ["--gil"] if gil else []
    spies = [
        subprocess.Popen(
            [str(PY_SPY), "record", "--pid", str(pid), *options, "--threads", "-o", str(output)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for pid, output in zip(pids.values(), outputs.values(), strict=True)
    ]
    time.sleep(1.0)  # py-spy attaches
    try:
        yield outputs
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
        for spy in spies:
            spy.wait(timeout=60)


# --- the run -------------------------------------------------------------------------------


async def run_once(base: str, key: str, args: argparse.Namespace) -> dict[str, Any]:
    """Prepare, then start the run and follow it to the end with every counter read around it."""
    pg_clients = {"api": args.pids["api"], "worker": args.pids["worker"], "bench": os.getpid()}
    headers = {"x-api-key": key}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as client:
        registered: dict[str, Any] = {"name": "bench", "url": args.agent_url}
        if args.agent_max_concurrency:
            # The agent's limit held across workers: leases in Redis around every call.
            registered["max_concurrency"] = args.agent_max_concurrency
        agent = (await client.post("/api/v1/agents", json=registered)).json()
        dataset_id = await imported_dataset(client, args.cases)
        # An idle backend that reported its statistics less than a second before reports the
        # next ones 10 s later (PGSTAT_IDLE_INTERVAL): the import's must be in before we start.
        # Meanwhile: what the processes cost a second when there is no work (their duties).
        await asyncio.sleep(1.0)
        idle_before = {name: cpu_ticks(pid) or 0 for name, pid in args.pids.items()}
        await asyncio.sleep(STATS_LAG_S - 1.0)
        idle_s = STATS_LAG_S - 1.0
        args.idle_ms_per_s = {
            name: ((cpu_ticks(pid) or 0) - idle_before[name]) / TICKS * 1000 / idle_s
            for name, pid in args.pids.items()
        }
        stats = await asyncpg.connect(args.database_url)
        redis_client = aioredis.from_url(args.redis_url)
        try:
            return await measured_run(
                client, stats, redis_client, agent["id"], dataset_id, pg_clients, args
            )
        finally:
            await redis_client.aclose()
            await stats.close()


async def measured_run(
    client: httpx.AsyncClient,
    stats: asyncpg.Connection,
    redis_client: aioredis.Redis,
    agent_id: str,
    dataset_id: str,
    pg_clients: dict[str, int],
    args: argparse.Namespace,
) -> dict[str, Any]:
    database = await stats.fetchval("SELECT current_database()")
    redis_pid = int((await redis_client.info("server"))["process_id"])
    tracked = {**args.pids, "redis": redis_pid}
    postgres = PostgresCpu(database, pg_clients)
    stop = asyncio.Event()
    counting = [args.pids["api"], args.pids["worker"]] if args.count_queries else []
    with profiled_if(args) as profiles:
        for pid in counting:
            os.kill(pid, signal.SIGUSR2)
        redis_before = await redis_stats(redis_client)
        db_before = await database_counters(stats)
        lsn_before = await stats.fetchval("SELECT pg_current_wal_lsn()::text")
        sampler_connection = await asyncpg.connect(args.database_url)
        postgres.sample(await activity(sampler_connection))
        ticks_before = {name: user_system_ticks(pid) or (0, 0) for name, pid in tracked.items()}
        sampler = asyncio.create_task(sample_postgres(sampler_connection, postgres, stop))
        started = time.perf_counter()
        body = {"dataset_id": dataset_id, "agent_id": agent_id, "concurrency": args.concurrency}
        run = (await client.post("/api/v1/eval-runs", json=body)).json()
        while run["status"] not in ("completed", "cancelled", "failed"):
            path = f"/api/v1/eval-runs/{run['run_id']}"
            run = (await client.get(path, params={"wait_s": 30})).json()
        wall_s = time.perf_counter() - started
        ticks_after = {name: user_system_ticks(pid) or (0, 0) for name, pid in tracked.items()}
        stop.set()
        await sampler
        await sampler_connection.close()
        lsn_after = await stats.fetchval("SELECT pg_current_wal_lsn()::text")
        redis_after = await redis_stats(redis_client)
        for pid in counting:
            os.kill(pid, signal.SIGUSR1)
    # Read before the next checkpoint recycles the segments.
    wal_total, wal_ours = await wal_of_run(stats, lsn_before, lsn_after)
    await asyncio.sleep(STATS_LAG_S)  # the run's statistics, reported by now
    db_after = await database_counters(stats)
    return {
        "run": run,
        "wall_s": wall_s,
        "cpu_s": {
            name: (sum(ticks_after[name]) - sum(ticks_before[name])) / TICKS for name in tracked
        },
        "system_s": {
            name: (ticks_after[name][1] - ticks_before[name][1]) / TICKS for name in tracked
        },
        "postgres_s": postgres.seconds_by_kind(),
        "redis": {
            name: (calls - before[0], usec - before[1])
            for name, (calls, usec) in redis_after.items()
            for before in [redis_before.get(name, (0, 0))]
        },
        "db": counter_delta(db_before, db_after),
        "wal_total": wal_total,
        "wal_ours": [dict(row) for row in wal_ours] if wal_ours is not None else None,
        "profiles": {name: str(path) for name, path in profiles.items()},
    }


@contextlib.contextmanager
def profiled_if(args: argparse.Namespace) -> Iterator[dict[str, Path]]:
    if not args.profile:
        yield {}
        return
    pids = {name: args.pids[name] for name in ("worker", "api")}
    with profiled(pids, args.profile_dir, args.rate, args.gil) as outputs:
        yield outputs


# --- the report ----------------------------------------------------------------------------


def report(result: dict[str, Any], args: argparse.Namespace) -> None:
    done = result["run"]["counts"]["done"]
    wall = result["wall_s"]
    ideal = args.cases * args.delay_ms / 1000 / args.concurrency
    print(
        f"{done:,} cases, agent {args.delay_ms:g} ms, concurrency {args.concurrency}: "
        f"{wall:.2f} s = {done / wall:,.0f} cases/s (ideal {ideal:.2f} s = "
        f"{args.cases / ideal if ideal else 0:,.0f} cases/s; status {result['run']['status']}, "
        f"passed {result['run']['counts'].get('passed', '?')})"
    )
    report_cpu(result, done)
    report_redis(result["redis"], done)
    report_database(result["db"], done)
    report_wal(result, done)
    if args.count_queries:
        report_queries(args.query_counts, done)
    for name, path in result["profiles"].items():
        print()
        summarise(Path(path), name, result["cpu_s"][name] * 1000 / done)


def report_cpu(result: dict[str, Any], done: int) -> None:
    cpu = result["cpu_s"]
    postgres = result["postgres_s"]
    ours = {kind: s for kind, s in postgres.items() if kind != "other databases"}
    per_case = {
        "api": cpu["api"],
        "worker": cpu["worker"],
        "postgres": sum(ours.values()),
        "redis": cpu["redis"],
    }
    system = result["system_s"]
    print("CPU per case (ms):")
    for name, seconds in per_case.items():
        kernel = f", of which system {system[name] * 1000 / done:.3f}" if name in system else ""
        print(f"  {name:<10} {seconds * 1000 / done:7.3f}   ({seconds:.2f} s{kernel})")
    total = sum(per_case.values())
    print(f"  {'total':<10} {total * 1000 / done:7.3f}   ({total:.2f} s; target <= 0.5 ms)")
    print(f"  {'fake agent':<10} {cpu['agent'] * 1000 / done:7.3f}   (not counted)")
    idle = result.get("idle_ms_per_s", {})
    idle_share = idle.get("worker", 0) * result["wall_s"] / done
    print(
        "Idle before the run (duties, polling), CPU ms a second: "
        + ", ".join(f"{name} {value:.1f}" for name, value in idle.items())
        + f"; over this run's wall time, {idle_share:.3f} ms per case of the worker's figure"
    )
    print("PostgreSQL CPU by what it served (ms per case):")
    for kind, seconds in sorted(postgres.items(), key=lambda item: -item[1]):
        note = " (not counted)" if kind == "other databases" else ""
        note = " (shared with the server's other users)" if kind.startswith("server") else note
        print(f"  {kind:<34} {seconds * 1000 / done:7.3f}{note}")


def report_redis(redis_delta: dict[str, tuple[int, int]], done: int) -> None:
    used = {name: value for name, value in redis_delta.items() if value[0]}
    calls = sum(value[0] for value in used.values())
    usec = sum(value[1] for value in used.values())
    print(
        f"Redis: {calls / done:.3f} commands per case ({calls:,} in all), "
        f"{usec / done:.2f} us of command time per case"
    )
    for name, (count, micros) in sorted(used.items(), key=lambda item: -item[1][0])[:12]:
        print(f"  {name:<22} {count:>8,}  {count / done:7.4f}/case  {micros / done:6.2f} us/case")


def report_database(db: dict[str, Any], done: int) -> None:
    database = db["database"]
    print(
        f"PostgreSQL: {database['xact_commit'] / done:.4f} commits per case "
        f"({database['xact_commit']:,}), rows inserted {database['tup_inserted'] / done:.3f}, "
        f"updated {database['tup_updated'] / done:.3f}, fetched "
        f"{database['tup_fetched'] / done:.2f}, returned {database['tup_returned'] / done:.2f} "
        f"per case; buffer hits {database['blks_hit'] / done:.1f}, reads "
        f"{database['blks_read'] / done:.2f} per case"
    )
    tables = sorted(
        db["tables"].items(),
        key=lambda item: -(item[1]["n_tup_ins"] + item[1]["n_tup_upd"] + item[1]["idx_scan"]),
    )
    print(f"  {'table':<24} {'ins/case':>9} {'upd/case':>9} {'hot upd':>8} {'idx scans':>10}")
    for name, row in tables[:8]:
        if row["n_tup_ins"] or row["n_tup_upd"] or row["idx_scan"] or row["seq_scan"]:
            print(
                f"  {name:<24} {row['n_tup_ins'] / done:9.3f} {row['n_tup_upd'] / done:9.3f} "
                f"{row['n_tup_hot_upd']:8,} {row['idx_scan']:10,}"
            )


def report_wal(result: dict[str, Any], done: int) -> None:
    total = result["wal_total"]
    print(f"WAL: {total / done:,.0f} bytes per case over the whole cluster ({total / 1e6:.1f} MB)")
    ours = result["wal_ours"]
    if ours is None:
        return
    bytes_ = sum(row["bytes"] for row in ours)
    fpi = sum(row["fpi_bytes"] for row in ours)
    print(
        f"  of which the benchmark database's transactions: {bytes_ / done:,.0f} bytes per case "
        f"(full-page images {fpi / done:,.0f})"
    )
    for row in ours[:12]:
        print(
            f"  {row['kind']:<48} {row['records'] / done:7.3f} records/case "
            f"{row['bytes'] / done:8,.0f} bytes/case"
        )


def report_queries(counts: dict[str, dict[str, list[float]]], done: int) -> None:
    for process, statements in counts.items():
        calls = sum(count for count, _ in statements.values())
        seconds = sum(elapsed for _, elapsed in statements.values())
        print(
            f"{process} statements: {calls / done:.3f} per case ({calls:,}), client-observed "
            f"{seconds * 1e6 / done:.0f} us per case"
        )
        ranked = sorted(statements.items(), key=lambda item: -item[1][1])
        for text, (count, elapsed) in ranked[:15]:
            print(
                f"  {count:>6,} {count / done:6.3f}/case {elapsed * 1e6 / max(count, 1):7.0f} "
                f"us each  {text[:110]}"
            )


# --- profiles ------------------------------------------------------------------------------

# Where a stack's time goes, by the innermost of these frames it holds (function, file part).
PATHS = [
    ("run_lane", "workers/lanes.py", "lane: other"),
    ("_work_through", "workers/lanes.py", "lane: other"),
    ("_calls_for", "workers/lanes.py", "lane: pacing"),
    ("_record", "workers/lanes.py", "lane: grading handoff"),
    ("record_chunk", "app/services/recording.py", "lane: grading handoff"),
    ("_items", "workers/lanes.py", "db: read the chunk's items"),
    ("_plan", "workers/lanes.py", "db: plan (once a lane)"),
    ("_calls", "workers/lanes.py", "agent calls: gather, tasks"),
    ("_call", "workers/lanes.py", "agent calls: per item (body, slots)"),
    ("slot", "workers/fair_slots.py", "agent calls: fair slots"),
    ("slot", "app/coordination/agent_limits.py", "redis: agent limiter"),
    ("turn", "app/coordination/rate_limits.py", "redis: host pacer"),
    ("call", "app/agents/caller.py", "agent client"),
    ("parse_reply", "app/agents/replies.py", "agent client: parse reply"),
    ("_result", "app/agents/caller.py", "agent client: result, metrics"),
    ("grade_all", "app/services/recording.py", "grading"),
    ("grade", "app/services/recording.py", "grading"),
    ("answered", "app/services/recording.py", "grading: NewResult"),
    ("grade_case", "app/grading/case.py", "grading: grade_case"),
    ("observation_from_wire", "app/grading/observations.py", "grading: observation"),
    ("immediate_verdicts", "app/judge/judging.py", "grading: judge verdicts"),
    ("graded_as", "app/domain/case_results.py", "grading: NewResult"),
    ("call_record", "app/agents/calls.py", "grading: NewResult"),
    ("store", "app/services/recording.py", "db: store chunk (other)"),
    ("hold", "app/services/recording.py", "db: finish chunk"),
    ("insert_new", "app/db/case_results.py", "db: insert results"),
    ("add", "app/db/run_counts.py", "db: apply counts"),
    ("store_gate", "app/db/run_gates.py", "db: store gate"),
    ("_next_chunk", "workers/lanes.py", "db: next chunk"),
    ("finish", "app/db/chunks.py", "db: finish chunk"),
    ("_hand_back", "workers/lanes.py", "db: hand back"),
    ("notify", "app/db/runs.py", "db: notify"),
    ("enqueue_quietly", "app/queue.py", "redis: enqueue"),
    ("send_heartbeat", "workers/upkeep.py", "duty: heartbeat"),
    ("watch_cancellations", "workers/upkeep.py", "duty: cancellations"),
    ("reap", "workers/upkeep.py", "duty: reaper"),
    ("read_waiting_traces", "workers/trace_reading.py", "duty: traces"),
    ("watch_loop_lag", "app/observability/loop_lag.py", "duty: loop lag"),
    ("main", "arq/worker.py", "arq: polling and jobs"),
    ("run_job", "arq/worker.py", "arq: job bookkeeping"),
    ("finish_job", "arq/worker.py", "arq: job bookkeeping"),
]
COMPONENTS = [
    ("app/grading/", "grading"),
    ("re2", "re2"),
    ("app/agents/", "agentlasso.agents"),
    ("httpcore", "httpcore"),
    ("h11", "h11"),
    ("anyio", "anyio"),
    ("asyncpg", "asyncpg"),
    ("app/db/", "agentlasso.db"),
    ("redis/", "redis-py"),
    ("arq/", "arq"),
    ("msgspec", "msgspec"),
    ("prometheus_client", "prometheus"),
    ("app/observability/", "agentlasso.observability"),
    ("app/coordination/", "agentlasso.coordination"),
    ("app/engine/", "agentlasso.engine"),
    ("app/domain/", "agentlasso.domain"),
    ("app/", "app other"),
    ("logging/", "logging"),
    ("uuid.py", "uuid"),
    ("concurrent/", "threads"),
    ("threading.py", "threads"),
    ("asyncio/", "asyncio"),
    ("litestar", "litestar"),
    ("uvicorn", "uvicorn"),
]


def parse_frame(frame: str) -> tuple[str, str]:
    """(function, file) of a py-spy frame `function (file)`."""
    function, _, rest = frame.partition(" (")
    path = rest.rstrip(")")
    for cut in ("site-packages/", "/work/main/", "lib/python3.11/"):
        if cut in path:
            path = path.split(cut, 1)[1]
            break
    return function, path


THREAD_FRAMES = ("thread", "process")


def read_collapsed(path: Path) -> list[tuple[list[tuple[str, str]], int, str]]:
    """Each stack (root first) with its sample count and its thread."""
    stacks = []
    for line in path.read_text().splitlines():
        frames_text, _, count = line.rpartition(" ")
        if not frames_text:
            continue
        frames = frames_text.split(";")
        thread = frames[0] if frames[0].startswith(THREAD_FRAMES) else ""
        body = [parse_frame(frame) for frame in frames if not frame.startswith(THREAD_FRAMES)]
        stacks.append((body, int(count), thread))
    return stacks


# Leaves where a thread waits rather than runs: a pool thread waiting for work, the event loop
# in epoll_wait. py-spy's idle detection lets some of them through.
IDLE_LEAVES = {
    ("_worker", "concurrent/futures/thread.py"),
    ("EpollSelector.select", "selectors.py"),
    ("Condition.wait", "threading.py"),
    ("Event.wait", "threading.py"),
}


def summarise(path: Path, name: str = "", ms_per_case: float | None = None, top: int = 25) -> None:
    """Top functions by self and cumulative samples, time by thread, component and path; with
    the process's CPU per case, each share also in microseconds per case."""
    every = read_collapsed(path)
    stacks = [stack for stack in every if not stack[0] or stack[0][-1] not in IDLE_LEAVES]
    idle = sum(count for _, count, _ in every) - sum(count for _, count, _ in stacks)
    total = sum(count for _, count, _ in stacks) or 1
    scale = (ms_per_case or 0) * 1000 / total
    own: Counter[str] = Counter()
    cumulative: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    components: Counter[str] = Counter()
    paths: Counter[str] = Counter()
    for frames, count, thread in stacks:
        threads[thread_kind(thread, frames)] += count
        if frames:
            own[label(frames[-1])] += count
        for key in {label(frame) for frame in frames}:
            cumulative[key] += count
        components[component(frames)] += count
        paths[path_of(frames)] += count
    print(f"== {name or path.name}: {total:,} samples, {idle:,} idle ones left out ({path})")
    if scale:
        print(f"   (us/case: the share of {ms_per_case:.3f} ms per case, the process's CPU)")
    for title, counts in (
        ("threads", threads),
        ("component (self time, by the leaf's package)", components),
        ("path (innermost marker frame)", paths),
    ):
        print(f"-- {title}")
        for key, count in counts.most_common(30):
            print(f"  {100 * count / total:6.2f}% {count * scale:6.1f}  {key}")
    for title, counts in (("self", own), ("cumulative", cumulative)):
        print(f"-- top {top} functions by {title} time")
        for key, count in counts.most_common(top):
            print(f"  {100 * count / total:6.2f}% {count * scale:6.1f}  {key}")
    write_speedscope(path, stacks)


def label(frame: tuple[str, str]) -> str:
    return f"{frame[0]} ({frame[1]})"


def thread_kind(thread: str, frames: list[tuple[str, str]]) -> str:
    if any(file.endswith("concurrent/futures/thread.py") for _, file in frames):
        return "thread pool (grading, DNS, ...)"
    return "main thread (event loop)" if frames else "no frames"


def component(frames: list[tuple[str, str]]) -> str:
    for _function, file in reversed(frames):
        for part, name in COMPONENTS:
            if part in file:
                return name
    return frames[-1][1] if frames else "?"


def path_of(frames: list[tuple[str, str]]) -> str:
    for function, file in reversed(frames):
        for marker, part, name in PATHS:
            if function == marker and part in file:
                return name
    if any("redis/" in file for _, file in frames):
        return "redis client, no app frame (arq polling, ...)"
    if any("asyncpg" in file for _, file in frames):
        return "asyncpg, no app frame (protocol callbacks)"
    if any("anyio" in file or "httpcore" in file for _, file in frames):
        return "anyio/httpcore, no app frame (socket callbacks)"
    if frames and "asyncio/" in frames[-1][1]:
        return "event loop itself (select, callbacks, task steps)"
    return "other: " + (label(frames[-1]) if frames else "?")


def write_speedscope(path: Path, stacks: list[tuple[list[tuple[str, str]], int, str]]) -> None:
    """The same samples as a speedscope file beside the collapsed one."""
    index: dict[tuple[str, str], int] = {}
    samples, weights = [], []
    for frames, count, _ in stacks:
        samples.append([index.setdefault(frame, len(index)) for frame in frames])
        weights.append(count)
    document = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": [{"name": f, "file": p} for f, p in index]},
        "profiles": [{
            "type": "sampled", "name": path.stem, "unit": "none", "startValue": 0,
            "endValue": sum(weights), "samples": samples, "weights": weights,
        }],
    }  # fmt: skip
    path.with_name(path.name.replace(".collapsed.txt", ".speedscope.json")).write_text(
        json.dumps(document)
    )


# --- main ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--delay-ms", type=float, default=50)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--worker-concurrency", type=int, default=200)
    parser.add_argument("--agent-max-concurrency", type=int, help="register the agent with it")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--profile-dir", type=Path, default=PROFILE_DIR)
    parser.add_argument("--gil", action="store_true", help="profile only GIL-holding samples")
    parser.add_argument("--count-queries", action="store_true")
    parser.add_argument("--own-redis", action="store_true")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    parser.add_argument("--summarise", type=Path, help="only summarise this collapsed profile")
    parser.add_argument("--ms-per-case", type=float, help="with --summarise: the process's CPU")
    args = parser.parse_args()
    if args.summarise:
        summarise(args.summarise, ms_per_case=args.ms_per_case)
        return
    with server_urls() as (postgres_url, shared_redis_url), contextlib.ExitStack() as stack:
        args.redis_url = stack.enter_context(own_redis()) if args.own_redis else shared_redis_url
        result = run_bench(postgres_url, args)
    report(result, args)
    if args.json:
        args.json.write_text(json.dumps(result, default=str, indent=1))


def run_bench(postgres_url: str, args: argparse.Namespace) -> dict[str, Any]:
    database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
    args.database_url = database_url
    counts_dir = Path(tempfile.mkdtemp(prefix="agentlasso-queries-"))
    env = {
        "DATABASE_URL": database_url, "REDIS_URL": args.redis_url,
        "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
        "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
    }  # fmt: skip
    try:
        with (
            agent_process(args.delay_ms) as (agent_url, agent_pid),
            api_for(database_url, args.redis_url, env, counts_dir, args) as (base_url, api_pid),
            worker(
                {**env, "AGENTLASSO_QUERY_COUNTS": str(counts_dir / "worker.json")},
                args.worker_concurrency,
                args.count_queries,
            ) as worker_pid,
        ):
            args.agent_url = agent_url
            args.pids = {"api": api_pid, "worker": worker_pid, "agent": agent_pid}
            result = asyncio.run(run_once(base_url, new_key(database_url), args))
            result["idle_ms_per_s"] = args.idle_ms_per_s
            if args.count_queries:
                time.sleep(0.5)  # the processes write their counts on SIGUSR1
                args.query_counts = {
                    name: json.loads((counts_dir / f"{name}.json").read_text())
                    for name in ("worker", "api")
                }
        return result
    finally:
        asyncio.run(drop_database(postgres_url, database_url))


@contextlib.contextmanager
def api_for(
    database_url: str,
    redis_url: str,
    env: dict[str, str],
    counts_dir: Path,
    args: argparse.Namespace,
) -> Iterator[tuple[str, int]]:
    """`agentlasso api`, under the query counter with --count-queries."""
    if not args.count_queries:
        with api_process(database_url, redis_url, env) as api:
            yield api
        return
    with counting_api(database_url, redis_url, env, counts_dir) as api:
        yield api


@contextlib.contextmanager
def counting_api(
    database_url: str, redis_url: str, env: dict[str, str], counts_dir: Path
) -> Iterator[tuple[str, int]]:
    from tests.support.processes import wait_ready

    port = free_port()
    full = {
        **os.environ, **env, "DATABASE_URL": database_url, "REDIS_URL": redis_url,
        "AGENTLASSO_QUERY_COUNTS": str(counts_dir / "api.json"),
    }  # fmt: skip
    argv = [sys.executable, "-c", QUERY_COUNTER, "api", "--port", str(port), "--log-level",
            "warning"]  # fmt: skip
    process = subprocess.Popen(argv, cwd=ROOT, env=full)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base_url, process)
        yield base_url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    main()
