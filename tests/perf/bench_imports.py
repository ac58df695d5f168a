"""Benchmark: 100,000 promptfoo tests (YAML, and the same config as JSON) imported through the
API, against 100,000 JSON Lines cases holding the same checks.

Target (issue 28): the promptfoo YAML import within 1.5x of the JSON Lines one. Run:

    .venv/bin/python tests/perf/bench_imports.py [--cases 100000]
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import msgspec

from tests.perf.harness import rss_mb, run_against_api

TEST_YAML = """  - description: refund path {n}
    vars:
      question: "Order #{n} arrived broken, I want my money back"
    assert:
      - type: icontains
        value: refund
      - type: not-icontains
        value: guarantee
      - type: llm-rubric
        value: Apologises and confirms the refund amount
      - type: latency
        threshold: 5000
"""


def promptfoo_yaml(cases: int) -> bytes:
    """A promptfoo config of `cases` tests, four asserts each, as YAML."""
    head = "description: bench\nprompts: ['{{question}}']\nproviders: [echo]\ntests:\n"
    return (head + "".join(TEST_YAML.format(n=n) for n in range(cases))).encode()


def promptfoo_test(n: int) -> dict[str, Any]:
    return {
        "description": f"refund path {n}",
        "vars": {"question": f"Order #{n} arrived broken, I want my money back"},
        "assert": [
            {"type": "icontains", "value": "refund"},
            {"type": "not-icontains", "value": "guarantee"},
            {"type": "llm-rubric", "value": "Apologises and confirms the refund amount"},
            {"type": "latency", "threshold": 5000},
        ],
    }


def promptfoo_json(cases: int) -> bytes:
    return msgspec.json.encode({"tests": [promptfoo_test(n) for n in range(cases)]})


def jsonl(cases: int) -> bytes:
    """The same cases as JSON Lines: what the promptfoo import makes of each test."""
    return b"".join(
        msgspec.json.encode(
            {
                "description": f"refund path {n}",
                "input": f"Order #{n} arrived broken, I want my money back",
                "checks": [
                    {"type": "output_contains", "value": "refund"},
                    {"type": "output_not_contains", "value": "guarantee"},
                    {"type": "llm_judge", "criterion": "Apologises and confirms the refund amount"},
                    {"type": "latency_below", "ms": 5000},
                ],
            }
        )
        + b"\n"
        for n in range(cases)
    )


def timed_import(
    client: httpx.AsyncClient | httpx.Client, params: dict[str, str], body: bytes, kind: str
) -> float:
    assert isinstance(client, httpx.Client)
    dataset = client.post("/api/v1/datasets", json={"name": "bench"}).json()
    started = time.perf_counter()
    response = client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        params=params,
        content=body,
        headers={"content-type": kind},
    )
    elapsed = time.perf_counter() - started
    assert response.status_code == 201, response.text[:500]
    return elapsed


def run(base_url: str, pid: int, key: str, cases: int) -> None:
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=600) as client:
        bodies = {
            "JSON Lines": ({}, jsonl(cases), "application/x-ndjson"),
            "promptfoo YAML": ({"format": "promptfoo"}, promptfoo_yaml(cases), "application/yaml"),
            "promptfoo JSON": ({"format": "promptfoo"}, promptfoo_json(cases), "application/json"),
        }
        times = {}
        for name, (params, body, kind) in bodies.items():
            times[name] = timed_import(client, params, body, kind)
            print(
                f"{name}: {cases:,} cases ({len(body) / 1e6:.0f} MB) in {times[name]:.2f} s "
                f"= {cases / times[name]:,.0f} cases/s; API peak RSS {rss_mb(pid, 'VmHWM'):.0f} MB"
            )
        for name in ("promptfoo YAML", "promptfoo JSON"):
            ratio = times[name] / times["JSON Lines"]
            print(f"{name} / JSON Lines: {ratio:.2f}x (target for YAML <= 1.5x)")


def main() -> None:
    run_against_api(run, default_cases=100_000)


if __name__ == "__main__":
    main()
