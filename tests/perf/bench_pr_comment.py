"""Benchmark: the pull-request comment of a 100,000-case run with 5,000 new failures.

Run: .venv/bin/python -m tests.perf.bench_pr_comment [--cases N] [--new-failures N]
Prints the time to render and write the comment file and its size.
Targets: under 1 s, at most 65,000 characters.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from agentlasso.cli.pr_comment import (
    MAX_COMMENT_CHARS,
    ComparedCase,
    ComparisonSummary,
    FailedCheck,
    write_comment_file,
)
from agentlasso.client import BucketCounts

RUN_URL = "https://lasso.example/runs/0190f3c2-7d1e-7b44-9a51-2f0c4e6b8d11"
LISTED = 1_000  # the most the client lists of each bucket other than the new failures
CHECKS = [
    FailedCheck(
        id="refund", type="tool_called", severity="error", detail="stripe.refund was not called"
    ),
    FailedCheck(
        id="policy",
        type="llm_judge",
        severity="warning",
        detail="The reply does not explain the refund policy; it says: " + "lorem ipsum " * 40,
    ),
    FailedCheck(id="pii", type="output_not_contains", severity="error", detail="found 4111 1111"),
]


def make_case(index: int, bucket: str) -> ComparedCase:
    return ComparedCase(
        test_case_id=f"refund-{index:06d}",
        bucket=bucket,
        description=f"Refund order #{index} | customer asks twice <politely>",
        input_preview=f"Hi, I'd like a refund for order {index}, it arrived broken.",
        failed_checks=[] if bucket in ("fixed", "removed_case") else CHECKS,
        card_url=f"{RUN_URL}/cases/refund-{index:06d}",
        revision_changed=index % 7 == 0,
    )


def make_summary(cases: int, new_failures: int) -> ComparisonSummary:
    others = {
        "still_failing": 3_000,
        "new_case": 500,
        "flaky": 300,
        "fixed": 2_000,
        "removed_case": 200,
    }
    counts = BucketCounts(
        new_failure=new_failures,
        still_passing=cases - new_failures - sum(others.values()),
        **others,
    )
    return ComparisonSummary(
        run_id="0190f3c2-7d1e-7b44-9a51-2f0c4e6b8d11",
        baseline_run_id="0190f3a0-1111-7222-8333-444455556666",
        run_url=RUN_URL,
        gate_passed=False,
        gate_reason=f"{new_failures:,} cases passed in the baseline and fail now",
        pass_rate=1 - (new_failures + others["still_failing"]) / cases,
        pass_threshold=0.9,
        counts=counts,
        new_failures=[make_case(i, "new_failure") for i in range(new_failures)],
        others={b: [make_case(i, b) for i in range(min(n, LISTED))] for b, n in others.items()},
        truncated_from=others,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--new-failures", type=int, default=5_000)
    args = parser.parse_args()
    summary = make_summary(args.cases, args.new_failures)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "comment.md"
        started = time.perf_counter()
        write_comment_file(path, summary)
        elapsed_s = time.perf_counter() - started
        size = len(path.read_text(encoding="utf-8"))
    print(
        f"comment for {args.cases:,} cases, {args.new_failures:,} new failures: "
        f"{elapsed_s * 1000:.1f} ms (target < 1,000 ms), "
        f"{size:,} characters (limit {MAX_COMMENT_CHARS:,})"
    )


if __name__ == "__main__":
    main()
