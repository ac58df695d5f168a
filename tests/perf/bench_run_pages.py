"""Benchmark: Test Runs on a 100,000-result run, and 200 browsers watching one live run.

    .venv/bin/python -m tests.perf.bench_run_pages [--cases 100000] [--rounds 60] [--watchers 200]

A real `agentlasso api` process, PostgreSQL and Redis; a signed-in session. A CI-mode run of a
100,000-case dataset gets its results posted: one case in ten fails its critical text check,
one in a thousand also calls a tool it must not, one in five hundred is graded only in part.
Each page is asked for `rounds` times; its server time is read from its Server-Timing header
(the client's own time is printed beside it). Targets (issue 12): p95 of the run page and of a
filtered page of failures under 50 ms, of a case card under 20 ms.

Watching: `watchers` browsers hold the run page's live stream open on a run still awaiting
results while batches of results arrive. The database's committed transactions and rows read
during those batches are compared with the same batches watched by nobody: what a watcher costs
the database.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import re
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import asyncpg
import httpx
import msgspec

from agentlasso.db import result_rows
from tests.perf.bench_web import signed_in
from tests.perf.harness import UNLIMITED, body_chunks, new_key, server_urls
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import SECRET_KEY, api_process

_GOOD_REPLY = '{"message": "Your refund is on its way: 3-5 business days."}'
_GOOD_CALLS = [{"name": "orders.lookup", "arguments": {}}, {"name": "stripe.refund"}]
_CANCEL_CALLS = [*_GOOD_CALLS, {"name": "orders.cancel", "arguments": {"order": 1}}]
_JUDGED = {"type": "llm_judge", "criterion": "Is polite", "severity": "minor"}


def server_ms(response: httpx.Response) -> float:
    found = re.search(r"total;dur=([\d.]+)", response.headers.get("server-timing", ""))
    assert found, "no Server-Timing"
    return float(found.group(1))


def timed(get: Callable[[], httpx.Response], rounds: int) -> tuple[list[float], list[float]]:
    """Server and client milliseconds of `rounds` requests (after two to warm up)."""
    for _ in range(2):
        get()
    server, client = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        response = get()
        client.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text[:300]
        server.append(server_ms(response))
    return server, client


def p95(taken: list[float]) -> float:
    return sorted(taken)[min(len(taken) - 1, int(len(taken) * 0.95))]


def report(name: str, measured: tuple[list[float], list[float]], target_ms: float) -> None:
    server, client = measured
    print(
        f"{name}: server p50 {statistics.median(server):.1f} ms, p95 {p95(server):.1f} ms "
        f"(target p95 < {target_ms:g} ms); client p95 {p95(client):.1f} ms"
    )


def result_for(number: int, case_id: str) -> dict[str, Any]:
    failing = number % 10 == 0
    return {
        "test_case_id": case_id,
        "actual_output": "Sorry." if failing else _GOOD_REPLY,
        "actual_tool_calls": _CANCEL_CALLS if number % 1000 == 0 else _GOOD_CALLS,
    }


def imported_dataset(api: httpx.Client, cases: int) -> str:
    dataset = api.post("/api/v1/datasets", json={"name": "bench"}).json()
    lines = b"".join(body_chunks(cases, expectation=False))
    # One case in five hundred also has a minor AI judge check this server cannot grade.
    lines = b"\n".join(
        line.replace(b'"checks":[', b'"checks":[' + _judged_json() + b",", 1)
        if number % 500 == 7 else line
        for number, line in enumerate(lines.split(b"\n"))
    )  # fmt: skip
    started = time.perf_counter()
    imported = api.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines, headers={"content-type": "application/x-ndjson"},
    )  # fmt: skip
    assert imported.status_code == 201, imported.text[:300]
    print(f"imported {cases:,} cases in {time.perf_counter() - started:.1f} s")
    return str(dataset["id"])


def _judged_json() -> bytes:
    return msgspec.json.encode(_JUDGED)


def post_results(api: httpx.Client, run: dict[str, Any], batch: int = 10_000) -> None:
    results = [result_for(n, case["test_case_id"]) for n, case in enumerate(run["test_cases"])]
    started = time.perf_counter()
    for start in range(0, len(results), batch):
        posted = api.post(
            "/api/v1/eval-run-results",
            json={"run_id": run["run_id"], "results": results[start : start + batch]},
        )
        assert posted.status_code == 200, posted.text[:300]
    print(f"posted {len(results):,} results in {time.perf_counter() - started:.1f} s")


def explain(database_url: str, run_id: str) -> None:
    """The plans of the run page's and the runs list's queries on this run (EXPLAIN ANALYZE)."""
    filtered = result_rows._narrowed(result_rows._ROWS, "", (), first_parameter=8)
    partial = result_rows._narrowed(
        result_rows._ROWS, result_rows._ONLY_PARTIAL, (), first_parameter=8
    )
    failed_tool_check = json.dumps([{"status": "failed", "type": "tool_not_called"}])
    window = result_rows.SCAN_WINDOW
    plans = (
        ("a page of failures", filtered, ("failed", 0, 51, None, None, 51)),
        ("failures with a failed 'Tool must NOT be called'", filtered,
         ("failed", 0, window, failed_tool_check, None, 51)),
        ("partially graded results", partial, ("passed", 0, window, None, None, 51)),
        ("the search's revisions (trigram index)",
         "SELECT id, test_case_id FROM test_case_revisions WHERE dataset_id = (SELECT dataset_id "
         "FROM eval_runs WHERE id = $1) AND ((input #>> '{}') || ' ' || coalesce(description, "
         "'')) ILIKE $2 LIMIT 2001", ("%Order #99990 %",)),
        ("runs list, gate failed",
         "SELECT id FROM eval_runs WHERE project_id = (SELECT project_id FROM eval_runs "
         "WHERE id = $1) AND ci_pass = $2 ORDER BY seq DESC LIMIT 51", (False,)),
    )  # fmt: skip

    async def show() -> None:
        connection = await asyncpg.connect(database_url)
        try:
            dataset_id = await connection.fetchval(
                "SELECT dataset_id FROM eval_runs WHERE id = $1", uuid.UUID(run_id)
            )
            hits = await connection.fetch(
                result_rows._SEARCH,
                dataset_id,
                "%Order #99990 %",
                result_rows.SEARCH_HITS + 1,
            )
            among = ([hit["test_case_id"] for hit in hits], [hit["id"] for hit in hits])
            searched = result_rows._narrowed(result_rows._ROWS, "", among, first_parameter=8)
            search_args = ("failed", 0, window, None, "%Order #99990 %", 51, *among)
            for name, sql, args in (*plans, ("the search's results", searched, search_args)):
                rows = await connection.fetch(
                    "EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) " + sql, uuid.UUID(run_id), *args
                )
                print(f"EXPLAIN ANALYZE, {name}:")
                print("\n".join("    " + row[0] for row in rows))
        finally:
            await connection.close()

    asyncio.run(show())


def pages(base_url: str, key: str, database_url: str, cases: int, rounds: int) -> str:
    api = httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=600)
    dataset_id = imported_dataset(api, cases)
    created = api.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})
    assert created.status_code == 201, created.text[:300]
    run = created.json()
    post_results(api, run)
    run_page = f"/runs/{run['run_id']}"
    browser = signed_in(base_url, key)
    last_input = f"Order #{cases - 10} "
    for name, params, target in (
        ("run page (opens on the failures)", {}, 50),
        ("run page, all results (failures first)", {"outcome": ""}, 50),
        ("failures with a failed 'Tool must NOT be called' (1 in 100 failures)",
         {"check_type": "tool_not_called"}, 50),
        ("failures with a failed minor check (none: a page says how far it looked)",
         {"severity": "minor"}, 50),
        ("partially graded results (1 in 500)", {"outcome": "", "partial": "yes"}, 50),
        (f"failures searched by input ({last_input!r}, one match)", {"q": last_input}, 50),
    ):  # fmt: skip
        report(name, timed(functools.partial(browser.get, run_page, params=params), rounds), target)
    second = browser.get(run_page)
    more = re.search(r'<a href="([^"]+)">More results</a>', second.text)
    assert more, "no next page"
    next_page = more.group(1).replace("&amp;", "&")
    report("run page, a next page of failures", timed(lambda: browser.get(next_page), rounds), 50)
    failing = run["test_cases"][1000]["test_case_id"]
    card = f"{run_page}/cases/{failing}"
    report("case card of a failure", timed(lambda: browser.get(card), rounds), 20)
    report("runs list", timed(lambda: browser.get("/runs"), rounds), 50)
    report("runs list, gate failed", timed(lambda: browser.get("/runs", params={"gate": "failed"}),
                                           rounds), 50)  # fmt: skip
    explain(database_url, run["run_id"])
    return dataset_id


async def watching(
    base_url: str, key: str, database_url: str, dataset_id: str, watchers: int
) -> None:
    """Database work while results arrive, with `watchers` live streams open and with none."""
    session = signed_in(base_url, key)  # one signed-in browser session, shared by every stream
    cookies = dict(session.cookies)
    session.close()
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}, timeout=600) as api:
        for count in (0, watchers):
            created = (await api.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})).json()
            cases = created["test_cases"][:2_000]
            streams = [asyncio.create_task(watch(base_url, cookies, created["run_id"]))
                       for _ in range(count)]  # fmt: skip
            await asyncio.sleep(3 + count / 50)  # every stream connected and subscribed
            before = await database_work(database_url)
            started = time.perf_counter()
            for start in range(0, len(cases), 100):
                batch = [result_for(n, case["test_case_id"])
                         for n, case in enumerate(cases[start : start + 100], start)]  # fmt: skip
                posted = await api.post(
                    "/api/v1/eval-run-results",
                    json={"run_id": created["run_id"], "results": batch},
                )
                assert posted.status_code == 200, posted.text[:300]
                await asyncio.sleep(0.3)  # a progress event goes out to every watcher
            took = time.perf_counter() - started
            after = await database_work(database_url)
            for stream in streams:
                stream.cancel()
            events = await asyncio.gather(*streams, return_exceptions=True)
            got = [n for n in events if isinstance(n, int)]
            print(
                f"{count} watchers: 20 batches of 100 results in {took:.1f} s; database: "
                f"{after[0] - before[0]:,} transactions, {after[1] - before[1]:,} rows read"
                + (f"; events each watcher got: min {min(got)}, max {max(got)}" if got else "")
            )


async def watch(base_url: str, cookies: dict[str, str], run_id: str) -> int:
    """One browser on the run page's live stream; how many events it got before it was
    stopped."""
    events = 0
    async with (
        httpx.AsyncClient(base_url=base_url, cookies=cookies, timeout=None) as browser,
        browser.stream("GET", f"/runs/{run_id}/live") as stream,
    ):
        try:
            async for line in stream.aiter_lines():
                events += line.startswith("event:")
        except asyncio.CancelledError:
            return events
    return events


async def database_work(database_url: str) -> tuple[int, int]:
    """Committed transactions and rows read (fetched) so far in the benchmark's database."""
    # An idle backend reports its statistics within PGSTAT_IDLE_INTERVAL (10 s) at the latest.
    await asyncio.sleep(11)
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("SELECT pg_stat_clear_snapshot()")
        row = await connection.fetchrow(
            "SELECT xact_commit, tup_fetched FROM pg_stat_database "
            "WHERE datname = current_database()"
        )
        assert row is not None
        return int(row["xact_commit"]), int(row["tup_fetched"])
    finally:
        await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--watchers", type=int, default=200)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        env = {
            "AGENTLASSO_SECRET_KEY": SECRET_KEY,
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
            **UNLIMITED,
        }
        try:
            with api_process(database_url, redis_url, env) as (base_url, _pid):
                key = new_key(database_url)
                dataset_id = pages(base_url, key, database_url, args.cases, args.rounds)
                asyncio.run(watching(base_url, key, database_url, dataset_id, args.watchers))
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
