"""Benchmark: judge calls through ONE JudgeClient against a rate-limited fake Anthropic API.

Run: .venv/bin/python tests/perf/bench_judge.py [--calls 2000] [--concurrency 50]
     [--limit-per-min 1200] [--latency-ms 200] [--no-pacer]
The fake answers every request in --latency-ms and enforces --limit-per-min with 429s (and a
retry-after), as the real API does. A token bucket at the limit paces the calls. Targets: an
achieved rate of 90% of the limit or more, under 5% of requests answered 429, and no lost
verdict (every call ends with a verdict). 2,000 calls at 1,200/min take about 100 s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agentlasso.judge.client import JudgeAnswer, JudgeClient, JudgeSettings
from agentlasso.judge.prompts import JudgeQuestion
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic


class TokenBucket:
    """Client-side pacing: a call starts only with a token; tokens come at the rate limit."""

    def __init__(self, per_minute: float, capacity: float = 1.0) -> None:
        self._rate_per_s = per_minute / 60
        self._capacity = capacity
        self._tokens = capacity
        self._updated = time.monotonic()
        # Waiters queue on the lock in arrival order, so no call starves.
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        """Wait for a token and spend it."""
        async with self._lock:
            while True:
                now = time.monotonic()
                elapsed_s = now - self._updated
                self._tokens = min(self._capacity, self._tokens + elapsed_s * self._rate_per_s)
                self._updated = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                await asyncio.sleep((1 - self._tokens) / self._rate_per_s)


def question(index: int) -> JudgeQuestion:
    return JudgeQuestion(
        kind="expectation",
        evaluation_type="SCORE" if index % 2 else "BOOLEAN",
        criterion="The refund takes 3-5 business days.",
        case_input=f"Where is the refund for order {index}?",
        reply=f"Order {index}: your refund arrives in 3-5 business days.",
        data_context={"region": "eu"},
    )


async def judge_many(
    client: JudgeClient, calls: int, concurrency: int, pacer: TokenBucket | None
) -> list[JudgeAnswer]:
    """`calls` judgements, `concurrency` at a time, each waiting for the pacer first."""
    remaining = iter(range(calls))
    answers: list[JudgeAnswer] = []

    async def worker() -> None:
        for index in remaining:
            if pacer is not None:
                await pacer.take()
            answers.append(await client.judge(question(index)))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return answers


async def benchmark(args: argparse.Namespace) -> None:
    fake = FakeAnthropic(
        rate_limit_per_min=args.limit_per_min, latency_s=args.latency_ms / 1000
    ).start()
    settings = JudgeSettings(
        api_key=FAKE_API_KEY, model="claude-sonnet-5-5", base_url=fake.base_url
    )
    client = JudgeClient(settings)
    pacer = None if args.no_pacer else TokenBucket(args.limit_per_min)
    try:
        started = time.perf_counter()
        answers = await judge_many(client, args.calls, args.concurrency, pacer)
        elapsed_s = time.perf_counter() - started
    finally:
        await client.aclose()
        fake.stop()
    report(args, answers, elapsed_s, requests=len(fake.requests), rate_limited=fake.count(429))


def report(
    args: argparse.Namespace,
    answers: list[JudgeAnswer],
    elapsed_s: float,
    *,
    requests: int,
    rate_limited: int,
) -> None:
    lost = [a for a in answers if a.verdict.not_graded_reason is not None]
    rate_per_min = (len(answers) - len(lost)) / elapsed_s * 60
    latencies = sorted(a.latency_ms for a in answers)
    p95_ms = latencies[int(len(latencies) * 0.95) - 1] if latencies else 0
    pacing = "no pacer" if args.no_pacer else f"token bucket at {args.limit_per_min}/min"
    print(f"ran: {' '.join(sys.argv)}")
    print(
        f"{len(answers)} judge calls, concurrency {args.concurrency}, {pacing}; the fake: "
        f"{args.latency_ms} ms per answer, {args.limit_per_min} requests/min"
    )
    print(
        f"achieved {rate_per_min:,.0f} verdicts/min in {elapsed_s:.1f} s = "
        f"{rate_per_min / args.limit_per_min:.1%} of the limit (target >= 90%)"
    )
    print(
        f"{requests} HTTP requests, {rate_limited} answered 429 = "
        f"{rate_limited / max(requests, 1):.2%} (target < 5%)"
    )
    print(f"lost verdicts: {len(lost)} (target 0)")
    print(f"latency per call: median {statistics.median(latencies)} ms, p95 {p95_ms} ms")
    for reason in sorted({a.verdict.not_graded_reason or "" for a in lost})[:5]:
        print(f"  lost: {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--limit-per-min", type=int, default=1_200)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--no-pacer", action="store_true", help="show what happens without it")
    asyncio.run(benchmark(parser.parse_args()))


if __name__ == "__main__":
    main()
