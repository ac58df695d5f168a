"""Fairness between projects in the workers: real API, worker and fake-agent processes.

    .venv/bin/python -m tests.perf.bench_fairness tarpit   # a hanging agent's run vs a small run
    .venv/bin/python -m tests.perf.bench_fairness judge    # a judge backlog vs a small CI batch

`tarpit`: project A runs 2,000 cases at concurrency 1,000 against an agent that answers after
60 s; once A holds its share of the worker's slots, project B starts 20 cases against an agent
answering in 50 ms. Target: B's first result within 5 s, and B done at its agent's speed.

`judge`: project A posts 400 CI results whose judge checks each take the fake judge 1 s, with 20
judge calls allowed at once; then project B posts 5 such results. Target: B's verdicts within a
few seconds (its calls get the slots A may not take), not after A's backlog (20 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

import httpx
import msgspec

from tests.perf.harness import delayed_agent, new_key, server_urls, worker_process
from tests.support.databases import drop_database, fresh_database
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from tests.support.processes import SECRET_KEY, api_process

REFUND_CHECK = {"type": "output_contains", "value": "refund"}
JUDGE_CHECK = {"type": "llm_judge", "criterion": "States the refund amount"}


async def dataset_with(http: httpx.AsyncClient, cases: int, checks: list[dict[str, Any]]) -> str:
    dataset = (await http.post("/api/v1/datasets", json={"name": "fair"})).json()
    lines = b"".join(
        msgspec.json.encode({"input": f"refund {n}", "checks": checks}) + b"\n"
        for n in range(cases)
    )
    await http.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines,
        headers={"content-type": "application/x-ndjson"},
    )
    return str(dataset["id"])


async def tarpit(base: str, keys: tuple[str, str], tarpit_url: str, fast_url: str) -> None:
    a = httpx.AsyncClient(base_url=base, headers={"x-api-key": keys[0]}, timeout=120)
    b = httpx.AsyncClient(base_url=base, headers={"x-api-key": keys[1]}, timeout=120)
    async with a, b:
        slow = (await a.post("/api/v1/agents", json={"name": "t", "url": tarpit_url,
                                                      "timeout_s": 120})).json()  # fmt: skip
        big = await a.post("/api/v1/eval-runs", json={
            "dataset_id": await dataset_with(a, 2_000, [REFUND_CHECK]),
            "agent_id": slow["id"], "concurrency": 1_000,
        })  # fmt: skip
        await asyncio.sleep(5)  # A's lanes fill the worker's slots (its share of them)
        fast = (await b.post("/api/v1/agents", json={"name": "f", "url": fast_url})).json()
        dataset = await dataset_with(b, 20, [REFUND_CHECK])
        submitted = time.perf_counter()
        small = (await b.post("/api/v1/eval-runs", json={
            "dataset_id": dataset, "agent_id": fast["id"], "concurrency": 20})).json()  # fmt: skip
        first_s = await first_result_after(b, small["run_id"], submitted)
        done = await b.get(f"/api/v1/eval-runs/{small['run_id']}", params={"wait_s": 60})
        done_s = time.perf_counter() - submitted
        await a.post(f"/api/v1/eval-runs/{big.json()['run_id']}/cancel")
    print(
        f"project B's 20-case run beside project A's 2,000 calls hanging 60 s: first result "
        f"{first_s:.2f} s after submission (target 5 s), {done.json()['status']} after "
        f"{done_s:.2f} s (its agent answers in 50 ms)"
    )


async def first_result_after(client: httpx.AsyncClient, run_id: str, since: float) -> float:
    while (await client.get(f"/api/v1/eval-runs/{run_id}")).json()["counts"]["done"] == 0:
        await asyncio.sleep(0.02)
    return time.perf_counter() - since


async def judge_backlog(base: str, keys: tuple[str, str]) -> None:
    a = httpx.AsyncClient(base_url=base, headers={"x-api-key": keys[0]}, timeout=300)
    b = httpx.AsyncClient(base_url=base, headers={"x-api-key": keys[1]}, timeout=300)
    async with a, b:
        backlog = asyncio.create_task(post_judged(a, await dataset_with(a, 400, [JUDGE_CHECK])))
        small_dataset = await dataset_with(b, 5, [JUDGE_CHECK])
        await asyncio.sleep(3)  # A's judge chunks hold their share of the judge slots
        started = time.perf_counter()
        answer = await post_judged(b, small_dataset)
        small_s = time.perf_counter() - started
        await backlog
        backlog_s = time.perf_counter() - started
    print(
        f"project B's 5 judged results beside project A's 400 (1 s each, 20 at once): "
        f"answered {answer.status_code} in {small_s:.2f} s; A's backlog took {backlog_s:.1f} s"
    )


async def post_judged(client: httpx.AsyncClient, dataset_id: str) -> httpx.Response:
    run = (await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})).json()
    results = [
        {"test_case_id": case["test_case_id"], "actual_output": "refund of 20 EUR"}
        for case in run["test_cases"]
    ]
    return await client.post(
        "/api/v1/eval-run-results",
        json={"run_id": run["run_id"], "results": results, "wait_s": 120},
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["tarpit", "judge"])
    scenario = parser.parse_args().scenario
    with server_urls() as (postgres_url, redis_url), FakeAnthropic(latency_s=1.0) as judge:
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        env = {
            "DATABASE_URL": database_url, "REDIS_URL": redis_url,
            "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
            "ANTHROPIC_API_KEY": FAKE_API_KEY, "ANTHROPIC_BASE_URL": judge.base_url,
            "AGENTLASSO_JUDGE_CONCURRENCY": "20", "AGENTLASSO_JUDGE_WAIT_S": "120",
        }  # fmt: skip
        try:
            with (
                api_process(database_url, redis_url, env) as (base_url, _pid),
                worker_process(env, 100),
            ):
                keys = (new_key(database_url), new_key(database_url))
                if scenario == "judge":
                    asyncio.run(judge_backlog(base_url, keys))
                    return
                with delayed_agent(60_000) as slow_url, delayed_agent(50) as fast_url:
                    asyncio.run(tarpit(base_url, keys, slow_url, fast_url))
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
