"""Benchmark: the judge's agreement figures of one criterion with 100,000 labelled results.

Run: .venv/bin/python tests/perf/bench_agreement_figures.py [--labelled N] [--rounds R]
Prints, as median and worst of `rounds`: counting N (judge_passed, human_passed) pairs into a
confusion, and every figure of contract section 15 from those counts (the kappa interval's
2,000 posterior draws included, each round on counts no earlier round had, so the interval's
cache never answers). Target: the figures well under 50 ms; the issue's bar is a whole
dataset's agreement under 200 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from agentlasso.domain.judge_agreement import Confusion, agreement_figures

TARGET_MS = 50.0


def labelled_pairs(n: int) -> list[tuple[bool, bool]]:
    """n pairs: 70% of people pass a reply, the judge agrees with them 85% of the time."""
    rng = random.Random(27)
    pairs = []
    for _ in range(n):
        human = rng.random() < 0.7
        pairs.append((human if rng.random() < 0.85 else not human, human))
    return pairs


def timed_ms(rounds: int, step: Callable[[int], object]) -> list[float]:
    """Milliseconds of each of `rounds` calls of step(round)."""
    times = []
    for round_ in range(rounds):
        started = time.perf_counter()
        step(round_)
        times.append((time.perf_counter() - started) * 1000)
    return times


def report(label: str, times: list[float]) -> None:
    """One line: the median and the worst."""
    print(f"{label:<46} median {statistics.median(times):7.2f} ms   max {max(times):7.2f} ms")


def main() -> None:
    """Count the pairs, then compute the figures, `rounds` times each."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--labelled", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    arguments = parser.parse_args()
    pairs = labelled_pairs(arguments.labelled)
    confusion = Confusion.from_pairs(pairs)
    print(f"{arguments.labelled:,} labelled results: {confusion}")
    report(
        "confusion from pairs", timed_ms(arguments.rounds, lambda _: Confusion.from_pairs(pairs))
    )

    def figures(round_: int) -> object:
        # One more agreeing result each round: new counts, so the interval is computed afresh.
        counts = Confusion(
            both_passed=confusion.both_passed + round_,
            both_failed=confusion.both_failed,
            judge_passed_human_failed=confusion.judge_passed_human_failed,
            judge_failed_human_passed=confusion.judge_failed_human_passed,
        )
        return agreement_figures(counts)

    times = timed_ms(arguments.rounds, figures)
    report("figures from counts (interval not cached)", times)
    print(agreement_figures(confusion))
    verdict = "met" if max(times) < TARGET_MS else "MISSED"
    print(f"target: figures under {TARGET_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
