"""Benchmark: agent calls per second and client CPU per call through one shared AgentClient.

Run: .venv/bin/python tests/perf/bench_agent_client.py [--calls N] [--concurrency C]
     [--profile tottime|cumulative]
The fake agent runs in a separate process on 127.0.0.1 so its CPU is not counted; the figures
are the client process's. Target: 1,000+ calls/s at 200 concurrent calls, well under 1 ms CPU
per call.

Hostile heads: .venv/bin/python tests/perf/bench_agent_client.py --hostile huge-header
     [--calls 5] [--max-header-bytes B] [--max-headers N]
An agent (in its own process) answers with one 32 MiB header value in 16 KiB writes
(huge-header), 1 GiB of header lines (header-flood) or 100,000 header fields (many-fields);
printed: the client's CPU and wall time per refused call and its peak memory. Pass a huge
--max-header-bytes and --max-headers to see what an unbounded head cost.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import pstats
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from agentlasso.agents import AgentClient, AgentTarget

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def fast_agent_process(*hostile: str) -> Iterator[str]:
    """The fast fake agent (or a hostile one) in a child process; yields its URL."""
    command = [sys.executable, str(Path(__file__)), "--serve", *hostile] if hostile else None
    process = subprocess.Popen(
        command or [sys.executable, "-m", "tests.support.agent_servers"],
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


HOSTILE_KINDS = ("huge-header", "header-flood", "many-fields")


async def hostile_answer(kind: str, writer: asyncio.StreamWriter) -> None:
    """Write one hostile answer's head (then a reply, if the client is still reading)."""
    writer.write(b"HTTP/1.1 200 OK\r\n")
    if kind == "huge-header":
        writer.write(b"X-Big: ")
        pieces = [b"a" * 16384] * 2048 + [b"\r\n"]
    elif kind == "header-flood":
        pieces = [b"X-Pad: " + b"a" * 4096 + b"\r\n"] * (1 << 18)
    else:
        pieces = [b"X-F: 1\r\n"] * 100_000
    for piece in pieces:
        writer.write(piece)
        await writer.drain()
    reply = b'{"output": "ok"}'
    writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(reply), reply))
    await writer.drain()


async def serve_hostile(kind: str) -> None:
    """Answer every request with the hostile answer; print the port, serve until killed."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                await hostile_answer(kind, writer)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


async def hostile_benchmark(url: str, calls: int, limits: dict[str, int]) -> None:
    target = AgentTarget(url=url, headers={}, timeout_s=300.0)
    rss_before_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    async with AgentClient(max_connections=1, allow_private=True, **limits) as client:
        cpu_started, wall_started = time.process_time(), time.perf_counter()
        errors = [(await client.call(target, {"input": "hi"})).error for _ in range(calls)]
        cpu_s, wall_s = time.process_time() - cpu_started, time.perf_counter() - wall_started
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{calls} calls: {errors[0]!r}")
    print(f"{cpu_s * 1000 / calls:,.1f} ms client CPU, {wall_s * 1000 / calls:,.1f} ms wall a call")
    print(f"peak memory {rss_mib:,.0f} MiB ({rss_mib - rss_before_mib:+,.0f} MiB during calls)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--profile", choices=("tottime", "cumulative"), help="print a profile")
    parser.add_argument("--hostile", choices=HOSTILE_KINDS, help="call a hostile agent")
    parser.add_argument("--serve", choices=HOSTILE_KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--max-header-bytes", type=int)
    parser.add_argument("--max-headers", type=int)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve_hostile(args.serve))
    elif args.hostile:
        limits = {"max_header_bytes": args.max_header_bytes, "max_headers": args.max_headers}
        given = {name: value for name, value in limits.items() if value is not None}
        with fast_agent_process(args.hostile) as url:
            asyncio.run(hostile_benchmark(url, args.calls or 5, given))
    else:
        with fast_agent_process() as url:
            asyncio.run(benchmark(url, args.calls or 10_000, args.concurrency, args.profile))


if __name__ == "__main__":
    main()
