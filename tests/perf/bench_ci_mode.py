"""Benchmark: CI mode on a 10,000-case dataset with 6 deterministic checks per case.

Targets (issue 4): `POST /eval-runs` in 1 s or less, then one `POST /eval-run-results` with
10,000 results in 2 s or less; prints both and the API's peak RSS. Run:

    .venv/bin/python tests/perf/bench_ci_mode.py [--cases 10000]
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import msgspec

from tests.perf.harness import body_chunks, rss_mb, run_against_api


def agent_reply(number: int) -> dict[str, Any]:
    """What an agent did: most cases pass, every seventh forgets the refund."""
    calls = [{"name": "orders.lookup", "arguments": {"order": number}}]
    if number % 7:
        calls.append({"name": "stripe.refund", "arguments": '{"amount": 20}'})
    return {
        "actual_output": f'{{"message": "Refund for order {number}: 3-5 business days."}}',
        "actual_tool_calls": calls,
    }


def run(base_url: str, pid: int, key: str, cases: int) -> None:
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=300) as client:
        dataset = client.post("/api/v1/datasets", json={"name": "bench"}).json()
        imported = client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases/import",
            content=b"".join(body_chunks(cases, expectation=False)),
            headers={"content-type": "application/x-ndjson"},
        )
        assert imported.status_code == 201, imported.text[:300]
        rss_before = rss_mb(pid)

        started = time.perf_counter()
        created = client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})
        create_s = time.perf_counter() - started
        assert created.status_code == 201, created.text[:300]
        run_body = created.json()
        test_cases = run_body["test_cases"]

        results = [
            {"test_case_id": case["test_case_id"], **agent_reply(number)}
            for number, case in enumerate(test_cases)
        ]
        body = msgspec.json.encode({"run_id": run_body["run_id"], "results": results})
        started = time.perf_counter()
        answer = client.post(
            "/api/v1/eval-run-results", content=body, headers={"content-type": "application/json"}
        )
        results_s = time.perf_counter() - started
        assert answer.status_code == 200, answer.text[:300]
        graded = answer.json()
        peak = rss_mb(pid, "VmHWM")
        print(
            f"POST /eval-runs: {len(test_cases):,} cases pinned and listed in {create_s:.3f} s "
            f"({len(created.content) / 1e6:.1f} MB answer; target <= 1 s)"
        )
        print(
            f"POST /eval-run-results: {len(results):,} results x 6 checks graded and stored in "
            f"{results_s:.3f} s ({len(body) / 1e6:.1f} MB body; target <= 2 s)"
        )
        print(
            f"gate: status {graded['status']}, pass rate {graded['pass_rate']:.3f}, "
            f"ci_pass {graded['ci_pass']}"
        )
        print(f"API RSS: {rss_before:.0f} MB before the run, peak {peak:.0f} MB")


def main() -> None:
    run_against_api(run, default_cases=10_000)


if __name__ == "__main__":
    main()
