"""Benchmark: each agent protocol's throughput and client CPU per call, and the envelope's cost.

Run: .venv/bin/python tests/perf/bench_agent_protocols.py [--calls N] [--concurrency C]
     [--delay-ms MS] [--runs R] [--profile agentlasso|openai_chat|a2a]
Bar (issue 29): at 10,000 calls, a 50 ms agent and 200 calls in flight, each protocol's
throughput and client CPU per call within 1.25x of the `agentlasso` protocol's; the envelope
(the `traceparent` header every call carries) under 2% of the client's CPU per call.

One AgentClient (max_connections = concurrency) in this process calls a fake agent per
protocol, each in its own process on 127.0.0.1 so its CPU is not counted: HTTP/1.1 keep-alive
on asyncio's raw protocol (tests/perf/delayed_agent.py's), answering every request after the
delay with a fixed body in the protocol's format (the same text and one tool call in each).
The variants are run in turn, R rounds, and the medians printed, so a drift of the machine's
load falls on all of them.

The envelope is measured two ways, as a difference of a few microseconds is within the noise
of whole runs on a shared machine: whole runs of `agentlasso` without it (the caller's
`new_traceparent` replaced by a constant and `Exchange.request` writing no traceparent line,
as before issue 29), and the client's envelope work alone (a fresh traceparent and the request
with its line, against the request without) timed in a loop, as a share of a call's CPU. The
bar is judged on the second; the first is printed with its run-to-run spread.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import json
import pstats
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentlasso.agent_wire.protocols import decode_answer, encode_request
from agentlasso.agents import AgentClient, AgentTarget
from agentlasso.agents import caller as caller_module
from agentlasso.agents.requests import Exchange
from agentlasso.domain.trace_context import new_traceparent

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = ("agentlasso", "openai_chat", "a2a")
# The agentlasso protocol with the envelope taken out: the reference for its cost.
BARE = "agentlasso-no-envelope"
MAX_RATIO = 1.25
MAX_ENVELOPE_SHARE = 0.02
# One run's calls/s, the client's CPU ms per call, and how much of that was in the kernel.
Run = tuple[float, float, float]
OUTPUT = "I have refunded order 1234. The money arrives in 3-5 business days."
TOOL = {"name": "stripe.refund", "arguments": {"order": 1234, "amount": 20}}
DECLARED_TOOL = {
    "name": "stripe.refund",
    "description": "Refund an order",
    "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}}},
}
REPLIES: dict[str, dict[str, Any]] = {
    "agentlasso": {"output": OUTPUT, "tool_calls": [TOOL]},
    "openai_chat": {
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1764790000,
        "model": "bench-model",
        "choices": [{
            "index": 0, "finish_reason": "tool_calls",
            "message": {
                "role": "assistant", "content": OUTPUT,
                "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": TOOL["name"], "arguments": json.dumps(TOOL["arguments"])},
                }],
            },
        }],
        "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
    },
    "a2a": {
        "jsonrpc": "2.0", "id": "1",
        "result": {
            "kind": "message", "role": "agent", "messageId": "m-bench", "contextId": "c-bench",
            "parts": [{"kind": "text", "text": OUTPUT}, {"kind": "data", "data": TOOL}],
        },
    },
}  # fmt: skip


async def serve(protocol: str, delay_ms: float) -> None:
    """Answer in the protocol's format on a free loopback port, printed first, until killed."""
    # Imported here: only the child, run as a module from the checkout, can import tests/.
    from tests.perf.delayed_agent import DelayedAgent, response_with, serve_with

    class ProtocolAgent(DelayedAgent):
        """tests/perf/delayed_agent.py's fast agent, answering in this protocol's format."""

        delay_s = delay_ms / 1000
        response = response_with(json.dumps(REPLIES[protocol]).encode())

    await serve_with(ProtocolAgent)


@contextlib.contextmanager
def agent_process(protocol: str, delay_ms: float) -> Iterator[str]:
    """The protocol's fake agent in a child process; yields its URL."""
    module = "tests.perf.bench_agent_protocols"
    command = [sys.executable, "-m", module, "--serve", protocol, "--delay-ms", str(delay_ms)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{int(process.stdout.readline())}/agent"
    finally:
        process.terminate()
        process.wait(timeout=10)


def target_for(protocol: str, url: str) -> AgentTarget:
    """The agent as a run would call it: an openai_chat one with its model, prompt and tool."""
    headers = {"authorization": "Bearer bench"}
    if protocol == "openai_chat":
        return AgentTarget(
            url, headers, 30.0, protocol=protocol, model="bench-model",
            system_prompt="You are the refunds agent of a shop.", tools=(DECLARED_TOOL,),
        )  # fmt: skip
    return AgentTarget(url, headers, 30.0, protocol=protocol)


def case_body(index: int) -> dict[str, Any]:
    """A worker's request body for one case (workers/lanes.py's keys)."""
    return {
        "input": f"Order #{index} arrived broken, I want my money back",
        "source": "agentlasso-test",
        "test_case_id": f"00000000-0000-4000-8000-{index:012d}",
        "run_id": "00000000-0000-4000-8000-000000000001",
        "trial": 1,
        "context": {"customer": {"tier": "gold"}},
    }


async def call_many(client: AgentClient, target: AgentTarget, calls: int, concurrency: int) -> int:
    """Make `calls` calls with `concurrency` in flight; how many failed or lost the tool call."""
    remaining = iter(range(calls))
    failures = 0

    async def worker() -> None:
        nonlocal failures
        for index in remaining:
            result = await client.call(target, case_body(index))
            ok = result.error is None and result.actual_output == OUTPUT
            failures += not (ok and result.actual_tool_calls == [TOOL])

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return failures


async def one_run(
    target: AgentTarget, calls: int, concurrency: int, profiler: cProfile.Profile | None
) -> Run:
    """One run through a fresh client (connections opened first): calls/s, and the client's
    CPU ms per call, of it in the kernel (loopback TCP is charged mostly to the sender)."""
    async with AgentClient(max_connections=concurrency, allow_private=True) as client:
        await call_many(client, target, concurrency * 2, concurrency)
        gc.collect()
        before, wall_started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        if profiler:
            profiler.enable()
        failures = await call_many(client, target, calls, concurrency)
        if profiler:
            profiler.disable()
        after, wall_s = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall_started
    if failures:
        raise SystemExit(f"{target.protocol}: {failures} of {calls} calls failed or misread")
    user_s, sys_s = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return calls / wall_s, (user_s + sys_s) * 1000 / calls, sys_s * 1000 / calls


def bare_request(self: Exchange, content: bytes) -> bytes:
    """Exchange.request as it was before the envelope: no traceparent line."""
    return b"%s%d\r\n\r\n%s" % (self.head, len(content), content)


CONSTANT_TRACE = ("0" * 32, b"00-" + b"0" * 32 + b"-" + b"0" * 16 + b"-01")


@contextlib.contextmanager
def without_envelope() -> Iterator[None]:
    """The client with no traceparent: a constant instead of a fresh one, and no header line."""
    # The name the caller looks up at each call (it imported the function into its module).
    names, request = vars(caller_module), Exchange.request
    names["new_traceparent"] = lambda: CONSTANT_TRACE
    Exchange.request = bare_request  # type: ignore[method-assign]
    try:
        yield
    finally:
        names["new_traceparent"] = new_traceparent
        Exchange.request = request  # type: ignore[method-assign]


def envelope_us(rounds: int = 200_000) -> float:
    """Microseconds a call spends on its envelope alone: a fresh traceparent and a request with
    its line, less a constant one and a request without (the best of five loops)."""
    exchange = Exchange(None, b"POST /agent HTTP/1.1\r\nContent-Length: ", b"", None)  # type: ignore[arg-type]
    content = json.dumps(case_body(1)).encode()
    constant = lambda: CONSTANT_TRACE  # noqa: E731 (the counterpart of new_traceparent)

    def loop(traceparent: Any, request: Any) -> float:
        started = time.perf_counter()
        for _ in range(rounds):
            exchange.traceparent = traceparent()[1]
            request(exchange, content)
        return time.perf_counter() - started

    with_s = min(loop(new_traceparent, Exchange.request) for _ in range(5))
    without_s = min(loop(constant, bare_request) for _ in range(5))
    return (with_s - without_s) * 1e6 / rounds


async def measure(
    urls: dict[str, str], calls: int, concurrency: int, runs: int
) -> dict[str, list[Run]]:
    """Every variant's figures of each round, the variants taken in turn."""
    figures: dict[str, list[Run]] = {name: [] for name in (*PROTOCOLS, BARE)}
    for round_number in range(1, runs + 1):
        for name in figures:
            protocol = "agentlasso" if name == BARE else name
            envelope = without_envelope() if name == BARE else contextlib.nullcontext()
            with envelope:
                run = await one_run(target_for(protocol, urls[protocol]), calls, concurrency, None)
            figures[name].append(run)
            print(
                f"  round {round_number} {name:<24} {run[0]:7,.0f} calls/s"
                f" {run[1]:.3f} ms CPU ({run[2]:.3f} kernel)"
            )
    return figures


def verdict(passed: bool) -> str:
    """The word for a bar met or missed."""
    return "PASS" if passed else "FAIL"


def report(figures: dict[str, list[Run]], envelope_cost_us: float) -> None:
    """The medians, each protocol's ratios to agentlasso, and the envelope's share."""
    medians = {
        name: tuple(statistics.median(run[i] for run in runs) for i in range(3))
        for name, runs in figures.items()
    }
    base_rate, base_cpu, _ = medians["agentlasso"]
    print(f"\nmedians\n{'variant':<24} {'calls/s':>8} {'CPU ms/call':>12} {'kernel':>7}"
          f" {'agentlasso/it calls/s':>22} {'it/agentlasso CPU':>18}")  # fmt: skip
    for name, (rate, cpu, kernel) in medians.items():
        print(f"{name:<24} {rate:8,.0f} {cpu:12.3f} {kernel:7.3f} {base_rate / rate:22.3f}"
              f" {cpu / base_cpu:18.3f}")  # fmt: skip
    for protocol in PROTOCOLS[1:]:
        rate, cpu, _ = medians[protocol]
        rate_ok, cpu_ok = base_rate / rate <= MAX_RATIO, cpu / base_cpu <= MAX_RATIO
        print(
            f"{protocol}: throughput {verdict(rate_ok)} ({base_rate / rate:.3f}x, bar"
            f" {MAX_RATIO}x), CPU per call {verdict(cpu_ok)} ({cpu / base_cpu:.3f}x)"
        )
    bare_cpu = medians[BARE][1]
    spread = [run[1] for run in figures["agentlasso"]]
    print(
        f"envelope, whole runs: {(base_cpu - bare_cpu) * 1000:+.1f} us a call"
        f" ({(base_cpu - bare_cpu) / base_cpu:+.1%} of CPU per call; agentlasso's runs span"
        f" {min(spread):.3f}-{max(spread):.3f} ms)"
    )
    share = envelope_cost_us / 1000 / base_cpu
    print(
        f"envelope, its work alone: {envelope_cost_us:.2f} us a call = {share:.2%} of"
        f" {base_cpu:.3f} ms: {verdict(share < MAX_ENVELOPE_SHARE)} (bar {MAX_ENVELOPE_SHARE:.0%})"
    )


def mapping_us(rounds: int = 50_000) -> None:
    """Print each protocol's own work a call, outside the client: encoding the request and
    decoding the answer (microseconds, the best of five loops), and the bytes each way."""
    print(
        "\nprotocol mapping alone (us a call): encode_request, decode_answer; request/answer bytes"
    )
    body = case_body(1)
    for protocol in PROTOCOLS:
        target = target_for(protocol, "http://127.0.0.1/agent")
        answer = json.dumps(REPLIES[protocol]).encode()

        def best(work: Any) -> float:
            return min(_timed(work, rounds) for _ in range(5)) * 1e6 / rounds

        encode_us = best(lambda: encode_request(target, body))  # noqa: B023 (used at once)
        decode_us = best(lambda: decode_answer(protocol, answer))  # noqa: B023
        size = len(encode_request(target, body))
        print(f"  {protocol:<12} {encode_us:5.2f} {decode_us:5.2f}; {size} / {len(answer)} B")


def _timed(work: Any, rounds: int) -> float:
    """Seconds for `rounds` calls of work."""
    started = time.perf_counter()
    for _ in range(rounds):
        work()
    return time.perf_counter() - started


async def profile(url: str, protocol: str, calls: int, concurrency: int) -> None:
    """One run of the protocol under cProfile: where the client's time goes. Timed by the
    process's CPU clock: by the wall clock a send() waiting for the core looks the costliest."""
    profiler = cProfile.Profile(time.process_time)
    rate, cpu, _ = await one_run(target_for(protocol, url), calls, concurrency, profiler)
    print(f"{protocol} (profiled, slower): {rate:,.0f} calls/s, {cpu:.3f} ms CPU per call")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", choices=PROTOCOLS, help="profile one run of a protocol")
    parser.add_argument("--serve", choices=PROTOCOLS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args.serve, args.delay_ms))
        return
    with contextlib.ExitStack() as stack:
        urls = {p: stack.enter_context(agent_process(p, args.delay_ms)) for p in PROTOCOLS}
        if args.profile:
            asyncio.run(profile(urls[args.profile], args.profile, args.calls, args.concurrency))
            return
        print(f"{args.calls} calls a run, {args.delay_ms:g} ms agent, concurrency"
              f" {args.concurrency}, {args.runs} rounds")  # fmt: skip
        figures = asyncio.run(measure(urls, args.calls, args.concurrency, args.runs))
    report(figures, envelope_us())
    mapping_us()


if __name__ == "__main__":
    main()
