"""Benchmark: a review item's page, and Save and next (contract section 15).

    .venv/bin/python -m tests.perf.bench_review_pages [--items 60] [--rounds 60]

A real `agentlasso api` process and worker processes whose judge is the fake Anthropic,
PostgreSQL and Redis; a CI run of `items` cases, each with two AI-judge criteria, a text check
and a tool check, answered with a reply of about 2 KB and two tool calls; every result queued
for review, the first labelled by two other reviewers (its page shows their labels). Figures:
- the item page's Server-Timing `total` (the server's time, without the loopback), asked for
  `rounds` times by a signed-in session; target (issue 27) p95 under 30 ms;
- Save and next's round trip: the label form posted and its 303 to the next item, by the
  client's clock, once per item; target p95 under 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import time

import httpx

from agentlasso.domain.scopes import Scope
from tests.perf.bench_web import p, server_timing, signed_in
from tests.perf.harness import UNLIMITED, new_key, server_urls
from tests.support.api import FINAL
from tests.support.databases import drop_database, fresh_database, key_of_scope
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from tests.support.judged_runs import judge_by_marker
from tests.support.processes import SECRET_KEY, WorkerProcesses, api_process

ITEM_TARGET_MS = 30
SAVE_TARGET_MS = 50
REPLY = (
    "Your refund of 20 EUR for order 1234 is on its way: it reaches your card in 3-5 business "
    "days. " * 22
)
CALLS = [
    {"name": "orders.lookup", "arguments": {"order": 1234, "why": "the customer asked"}},
    {"name": "stripe.refund", "arguments": {"order": 1234, "amount_eur": 20}},
]
CHECKS = [
    {"type": "llm_judge", "criterion": "States the refund amount", "id": "amount"},
    {"type": "llm_judge", "criterion": "Says when the money arrives", "id": "when"},
    {"type": "output_contains", "value": "business days", "id": "days"},
    {"type": "tool_called", "tool": "stripe.refund", "id": "refunded"},
]


def judged_results(api: httpx.Client, items: int) -> str:
    """A finished CI run of `items` judged cases; its id."""
    dataset = api.post("/api/v1/datasets", json={"name": "bench review"}).json()
    ids = []
    for number in range(items):
        case = {"input": f"Where is the refund for order {number}?", "checks": CHECKS,
                "description": f"Refund {number}"}  # fmt: skip
        ids.append(api.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case).json()["id"])
    run_id = api.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]}).json()["run_id"]
    results = [{"test_case_id": i, "actual_output": REPLY, "actual_tool_calls": CALLS} for i in ids]
    posted = api.post("/api/v1/eval-run-results", json={"run_id": run_id, "results": results})
    assert posted.status_code in (200, 202), posted.text
    deadline = time.monotonic() + 300
    while api.get(f"/api/v1/eval-runs/{run_id}").json()["status"] not in FINAL:
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.2)
    return str(run_id)


def labelled_by_others(base_url: str, database_url: str, api: httpx.Client, run_id: str) -> str:
    """Queue every result, and give the first two other reviewers' labels (two more keys): a
    label finishes an unassigned item, so the rest stay pending for Save and next."""
    key = api.headers["x-api-key"]
    assert api.post("/api/v1/review-items", json={"run_id": run_id}).status_code == 201
    items = api.get("/api/v1/review-items", params={"limit": 500}).json()["items"]
    for verdict in ("passed", "failed"):
        other = httpx.Client(base_url=base_url, headers={"x-api-key": other_key(database_url, key)})
        checks = [{"check_id": check, "verdict": verdict} for check in ("amount", "when")]
        body = {"verdict": verdict, "note": "a colleague's view", "checks": checks}
        assert other.post(f"/api/v1/review-items/{items[0]['id']}/labels", json=body).is_success
    return str(items[0]["id"])


def other_key(database_url: str, key: str) -> str:
    """Another admin key of the same project: another reviewer."""
    return asyncio.run(key_of_scope(database_url, key, Scope.ADMIN))


def form_fields(html: str) -> dict[str, str]:
    """The label form filled in: agree with each judge verdict, the reply passes, a note."""
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert csrf is not None
    checks = set(re.findall(r'name="(check_\d+)"', html))
    return {"csrf_token": csrf.group(1), "verdict": "passed", "note": "Fine by me.",
            **dict.fromkeys(checks, "agree")}  # fmt: skip


def measure(base_url: str, key: str, item_id: str, rounds: int) -> None:
    browser = signed_in(base_url, key)
    path = f"/review/{item_id}"
    assert "a colleague&#39;s view" in browser.get(path).text, "the others' labels are shown"
    for _ in range(3):
        assert browser.get(path).status_code == 200
    totals = []
    for _ in range(rounds):
        answer = browser.get(path)
        assert answer.status_code == 200, answer.text[:300]
        totals.append(server_timing(answer)["total"])
    print(
        f"review item page: server time p50 {statistics.median(totals):.1f} ms, p95 "
        f"{p(totals, 0.95):.1f} ms (target p95 < {ITEM_TARGET_MS} ms); "
        f"page {len(answer.content) / 1024:.0f} KB"
    )
    saves, served = [], []
    while path.startswith("/review/"):
        fields = form_fields(browser.get(path).text)
        started = time.perf_counter()
        saved = browser.post(f"{path}/labels", data=fields)
        saves.append((time.perf_counter() - started) * 1000)
        assert saved.status_code == 303, saved.text[:300]
        served.append(server_timing(saved)["total"])
        path = saved.headers["location"].split("?")[0]
    print(
        f"Save and next ({len(saves)} items): round trip p50 {statistics.median(saves):.1f} ms, "
        f"p95 {p(saves, 0.95):.1f} ms (target p95 < {SAVE_TARGET_MS} ms); server time p50 "
        f"{statistics.median(served):.1f} ms, p95 {p(served, 0.95):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url), FakeAnthropic(default=judge_by_marker) as ai:
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        queue = f"agentlasso:bench:{os.getpid()}"
        env = {
            "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_QUEUE": queue, **UNLIMITED,
            "ANTHROPIC_API_KEY": FAKE_API_KEY, "ANTHROPIC_BASE_URL": ai.base_url,
        }  # fmt: skip
        workers = WorkerProcesses(database_url, redis_url, queue, SECRET_KEY)
        try:
            with api_process(database_url, redis_url, env) as (base_url, _pid):
                workers.start(extra_env=env)
                key = new_key(database_url)
                api = httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=120)
                run_id = judged_results(api, args.items)
                item_id = labelled_by_others(base_url, database_url, api, run_id)
                measure(base_url, key, item_id, args.rounds)
        finally:
            workers.stop_all()
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
