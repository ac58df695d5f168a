"""Benchmark: 2,000 AI judge checks through the platform (API, worker, Redis pacing).

The fake Anthropic API answers in 200 ms and allows 1,200 requests a minute, answering 429
past that. One CI-mode batch of 2,000 results, each with one llm_judge check (replies differ,
so nothing comes from the cache), is judged by one worker process paced at
AGENTLASSO_JUDGE_RPM. Targets (issue 6): the achieved rate 90% of the limit or more, under 5%
answered 429, and no verdict lost. Run:

    .venv/bin/python -m tests.perf.bench_judge_platform [--calls 2000] [--rpm 1140]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

import httpx
import msgspec

from tests.perf.harness import (
    new_key,
    server_urls,
    worker_process,
)
from tests.support.databases import drop_database, fresh_database
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from tests.support.processes import SECRET_KEY, api_process

LIMIT_PER_MIN = 1200


async def judge_batch(base_url: str, key: str, calls: int) -> tuple[float, list[dict[str, Any]]]:
    async with httpx.AsyncClient(
        base_url=base_url, headers={"x-api-key": key}, timeout=300
    ) as client:
        dataset = (await client.post("/api/v1/datasets", json={"name": "judge bench"})).json()
        check = {"type": "llm_judge", "criterion": "States the refund amount"}
        lines = b"".join(
            msgspec.json.encode({"input": f"refund {n}", "checks": [check]}) + b"\n"
            for n in range(calls)
        )
        await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases/import",
            content=lines, headers={"content-type": "application/x-ndjson"},
        )  # fmt: skip
        run = (await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})).json()
        results = [
            {"test_case_id": case["test_case_id"], "actual_output": f"Refunded {n} EUR."}
            for n, case in enumerate(run["test_cases"])
        ]
        started = time.perf_counter()
        posted = await client.post(
            "/api/v1/eval-run-results",
            json={"run_id": run["run_id"], "results": results, "wait_s": 0},
        )
        assert posted.status_code in (200, 202), posted.text[:300]
        status = ""
        while status not in ("completed", "failed", "cancelled"):
            current = (
                await client.get(f"/api/v1/eval-runs/{run['run_id']}", params={"wait_s": 30})
            ).json()
            status = current["status"]
        elapsed = time.perf_counter() - started
        stored: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
            page = (
                await client.get(f"/api/v1/eval-runs/{run['run_id']}/results", params=params)
            ).json()
            stored += page["items"]
            if (cursor := page["next_cursor"]) is None:
                return elapsed, stored


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rpm", type=int, default=int(LIMIT_PER_MIN * 0.95))
    args = parser.parse_args()
    with (
        FakeAnthropic(latency_s=0.2, rate_limit_per_min=LIMIT_PER_MIN) as fake,
        server_urls() as (
            postgres_url,
            redis_url,
        ),
    ):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        env = {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "AGENTLASSO_SECRET_KEY": SECRET_KEY,
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
            "AGENTLASSO_JUDGE_RPM": str(args.rpm),
            "AGENTLASSO_JUDGE_CONCURRENCY": "50",
            "AGENTLASSO_JUDGE_RETRY_AFTER_CAP_S": "5",
        }
        try:
            with (
                api_process(database_url, redis_url, env) as (base_url, _pid),
                worker_process(env, 100),
            ):
                elapsed, stored = asyncio.run(
                    judge_batch(base_url, new_key(database_url), args.calls)
                )
        finally:
            asyncio.run(drop_database(postgres_url, database_url))
        answered = len(fake.statuses)
        limited = fake.count(429)
    verdicts = sum(r["check_results"][0]["status"] != "not_graded" for r in stored)
    rate = args.calls / elapsed * 60
    print(
        f"{args.calls:,} judge checks in {elapsed:.1f} s: {rate:,.0f} verdicts/min = "
        f"{rate / LIMIT_PER_MIN:.1%} of the {LIMIT_PER_MIN:,}/min limit (target >= 90%); "
        f"pacer at {args.rpm}/min"
    )
    print(
        f"requests answered: {answered:,}; 429s: {limited} = {limited / max(answered, 1):.1%} "
        f"(target < 5%)"
    )
    print(
        f"verdicts: {verdicts:,} of {len(stored):,} results; lost: {len(stored) - verdicts} "
        f"(target 0)"
    )


if __name__ == "__main__":
    main()
