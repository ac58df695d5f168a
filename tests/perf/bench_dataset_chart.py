"""Benchmark: the dataset page's charts over 50 runs of 100,000 results, and the run page's.

    .venv/bin/python tests/perf/bench_dataset_chart.py [--cases 100000] [--runs 50]
        [--rounds 20] [--index]

A real `agentlasso api` process on a fresh database. The dataset, its cases and its runs are
written straight into PostgreSQL with generate_series (posting 5 million results through the
API would take the benchmark's whole time): each case carries five checks, among them one of
12 "contains" phrases and one of 5 AI-judge criteria, and each run fails a tenth of its cases
on their phrase, a twentieth on their criterion, one in a thousand on a forbidden tool. Each
run's counters are what its results add up to, as the platform's stores leave them.

The dataset page and the newest run's page are each asked for `rounds` times (after two to
warm up); their server time is read from the Server-Timing header and printed as median and
p95, beside the client's. Target: the dataset page under 50 ms of server time. `--index`
creates the index the run page's latency histogram can read instead of the table (printed
below as the migration it would be), to compare with and without. EXPLAIN ANALYZE of each
chart query is printed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agentlasso.db import dataset_charts, run_charts
from tests.perf.bench_web import signed_in
from tests.perf.harness import UNLIMITED, new_key, server_urls
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import SECRET_KEY, api_process

LATENCY_INDEX = (
    "CREATE INDEX case_results_run_latency_idx ON case_results (run_id, agent_latency_ms) "
    "WHERE agent_latency_ms IS NOT NULL"
)

# The cases: five checks each, their ids c1..c5 as assign_check_ids gives them.
_CASES = """
WITH numbered AS (
    SELECT n, gen_random_uuid() AS case_id, gen_random_uuid() AS revision_id
    FROM generate_series(0, $2 - 1) AS n
), revisions AS (
    INSERT INTO test_case_revisions (id, test_case_id, dataset_id, revision, input, checks)
    SELECT revision_id, case_id, $1, 1, to_jsonb('Order #' || n || ' arrived broken'),
           jsonb_build_array(
             jsonb_build_object('id', 'c1', 'type', 'tool_called', 'severity', 'critical',
                                'tool', 'orders.lookup'),
             jsonb_build_object('id', 'c2', 'type', 'tool_not_called', 'severity', 'critical',
                                'tool', 'orders.cancel'),
             jsonb_build_object('id', 'c3', 'type', 'output_contains', 'severity', 'critical',
                                'value', 'phrase ' || n % 12, 'regex', false),
             jsonb_build_object('id', 'c4', 'type', 'llm_judge', 'severity', 'critical',
                                'criterion', 'The reply is polite, variant ' || n % 5),
             jsonb_build_object('id', 'c5', 'type', 'output_valid_json', 'severity', 'minor'))
    FROM numbered
)
INSERT INTO test_cases (id, dataset_id, current_revision_id)
SELECT case_id, $1, revision_id FROM numbered ORDER BY n
"""

_RUN = """
INSERT INTO eval_runs (id, project_id, dataset_id, mode, status, pass_threshold, total,
                       case_count, created_at, finished_at)
VALUES ($1, $2, $3, 'server', 'completed', 0.8, $4, $4, now() - make_interval(hours => $5),
        now() - make_interval(hours => $5))
"""

# One run's results: which checks fail is a pattern of the case's number and the run's.
_RESULTS = """
WITH cases AS (
    SELECT row_number() OVER (ORDER BY seq) - 1 AS n, id, current_revision_id
    FROM test_cases WHERE dataset_id = $2
), verdicts AS (
    SELECT n, id, current_revision_id,
           (n * 7 + $3) % 1000 = 0 AS cancelled, (n + $3) % 10 = 0 AS no_phrase,
           (n + 3 * $3) % 20 = 0 AS rude, (n + $3) % 50 = 0 AS not_json
    FROM cases
)
INSERT INTO case_results (run_id, test_case_id, revision_id, outcome, graded, pass_fail,
                          no_checks, score, partially_graded, judge_reasoning, check_results,
                          ungraded_items, output_reported, actual_output, tool_calls_reported,
                          actual_tool_calls, agent_latency_ms)
SELECT $1, id, current_revision_id,
       CASE WHEN cancelled OR no_phrase OR rude THEN 'failed' ELSE 'passed' END, true,
       NOT (cancelled OR no_phrase OR rude), false, 1.0, false, '',
       jsonb_build_array(
         jsonb_build_object('id', 'c1', 'type', 'tool_called', 'severity', 'critical',
                            'status', 'passed', 'passed', true, 'detail', 'Called orders.lookup.'),
         jsonb_build_object('id', 'c2', 'type', 'tool_not_called', 'severity', 'critical',
                            'status', CASE WHEN cancelled THEN 'failed' ELSE 'passed' END,
                            'passed', NOT cancelled, 'detail', 'orders.cancel'),
         jsonb_build_object('id', 'c3', 'type', 'output_contains', 'severity', 'critical',
                            'status', CASE WHEN no_phrase THEN 'failed' ELSE 'passed' END,
                            'passed', NOT no_phrase, 'detail', 'The reply says it.'),
         jsonb_build_object('id', 'c4', 'type', 'llm_judge', 'severity', 'critical',
                            'status', CASE WHEN rude THEN 'failed' ELSE 'passed' END,
                            'passed', NOT rude, 'detail', 'The judge says so.', 'score', 1),
         jsonb_build_object('id', 'c5', 'type', 'output_valid_json', 'severity', 'minor',
                            'status', CASE WHEN not_json THEN 'failed' ELSE 'passed' END,
                            'passed', NOT not_json, 'detail', '')),
       '[]', true, to_jsonb('Your refund is on its way: 3-5 business days.'::text), true,
       '[{"name": "orders.lookup", "arguments": {}}]',
       -- Most answers within a second, a long tail of slow ones.
       150 + (n * 37 + $3 * 11) % 700 + CASE WHEN n % 97 = 0 THEN 4000 ELSE 0 END
FROM verdicts
"""

_COUNT_RUN = """
UPDATE eval_runs r
SET done = c.done, graded = c.done, passed = c.passed,
    pass_rate = c.passed::float8 / nullif(c.done, 0), ci_pass = c.passed >= 0.8 * c.done
FROM (SELECT count(*) AS done, count(*) FILTER (WHERE outcome = 'passed') AS passed
      FROM case_results WHERE run_id = $1) c
WHERE r.id = $1
"""


async def build(database_url: str, key_project: str, cases: int, runs: int) -> tuple[str, str]:
    """A dataset of `cases` cases with `runs` completed runs of them; its id and its newest
    run's id."""
    connection = await asyncpg.connect(database_url)
    try:
        project_id = await connection.fetchval(
            "SELECT project_id FROM api_keys WHERE key_hash = $1", key_project
        )
        dataset_id = await connection.fetchval(
            "INSERT INTO datasets (project_id, name, case_count) VALUES ($1, 'Refunds', $2) "
            "RETURNING id",
            project_id, cases,
        )  # fmt: skip
        started = time.perf_counter()
        await connection.execute(_CASES, dataset_id, cases)
        print(f"wrote {cases:,} cases in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        run_id = uuid.uuid4()
        for number in range(runs):
            run_id = uuid.uuid4()
            await connection.execute(_RUN, run_id, project_id, dataset_id, cases, runs - number)
            await connection.execute(_RESULTS, run_id, dataset_id, number)
            await connection.execute(_COUNT_RUN, run_id)
        print(f"wrote {runs} runs of {cases:,} results in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        await connection.execute("VACUUM ANALYZE")
        print(f"VACUUM ANALYZE in {time.perf_counter() - started:.1f} s")
        return str(dataset_id), str(run_id)
    finally:
        await connection.close()


def server_ms(response: httpx.Response, name: str = "total") -> float:
    """A duration of the page's Server-Timing header: its total, or what it noted as `name`."""
    found = re.search(rf"{name};dur=([\d.]+)", response.headers.get("server-timing", ""))
    assert found, f"no {name} in Server-Timing"
    return float(found.group(1))


Measured = tuple[list[float], list[float], list[float]]


def timed(get: Callable[[], httpx.Response], rounds: int) -> Measured:
    """Server, charts' queries' and client milliseconds of `rounds` requests (after two to warm
    up)."""
    for _ in range(2):
        get()
    server, charts, client = [], [], []
    for _ in range(rounds):
        started = time.perf_counter()
        response = get()
        client.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text[:300]
        server.append(server_ms(response))
        charts.append(server_ms(response, "charts"))
    return server, charts, client


def p95(taken: list[float]) -> float:
    return sorted(taken)[min(len(taken) - 1, int(len(taken) * 0.95))]


def report(name: str, measured: Measured, target_ms: float) -> None:
    server, charts, client = measured
    print(
        f"{name}: server median {statistics.median(server):.1f} ms, p95 {p95(server):.1f} ms "
        f"(target < {target_ms:g} ms), of which the charts' queries median "
        f"{statistics.median(charts):.1f} ms, p95 {p95(charts):.1f} ms; client median "
        f"{statistics.median(client):.1f} ms"
    )


async def explain(database_url: str, dataset_id: str, run_id: str) -> None:
    """EXPLAIN ANALYZE of every chart query, with the arguments the pages give them."""
    connection = await asyncpg.connect(database_url)
    try:
        project_id = await connection.fetchval(
            "SELECT project_id FROM datasets WHERE id = $1", uuid.UUID(dataset_id)
        )
        plans = (
            ("pass rate over the last runs", dataset_charts.RUN_PASS_RATES,
             (project_id, uuid.UUID(dataset_id), dataset_charts.RUNS_CHARTED)),
            ("each criterion's failures in the sample", dataset_charts.CRITERION_FAILURES,
             (project_id, uuid.UUID(dataset_id), dataset_charts.RUNS_CHARTED,
              dataset_charts.RESULTS_SAMPLED_PER_RUN, dataset_charts.CRITERIA_CHARTED)),
            ("latency range", run_charts.LATENCY_RANGE, (uuid.UUID(run_id),)),
            ("latency buckets", run_charts.LATENCY_BUCKETS, (uuid.UUID(run_id), [0, 200, 400])),
            ("failures by check type", run_charts.FAILURES_BY_TYPE,
             (uuid.UUID(run_id), run_charts.FAILED_RESULTS_READ)),
        )  # fmt: skip
        for name, sql, args in plans:
            rows = await connection.fetch("EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) " + sql, *args)
            print(f"EXPLAIN ANALYZE, {name}:")
            print("\n".join("    " + row[0] for row in rows))
    finally:
        await connection.close()


async def add_index(database_url: str) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(LATENCY_INDEX)
        await connection.execute("VACUUM ANALYZE case_results")
    finally:
        await connection.close()


def pages(base_url: str, key: str, dataset_id: str, run_id: str, rounds: int) -> None:
    browser = signed_in(base_url, key)
    report(
        "dataset page (pass rate over 50 runs, criteria's failure rates)",
        timed(lambda: browser.get(f"/datasets/{dataset_id}"), rounds),
        50,
    )
    report(
        "run page (latency histogram, failures by check type)",
        timed(lambda: browser.get(f"/runs/{run_id}"), rounds),
        50,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--index", action="store_true", help=LATENCY_INDEX)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        env = {
            "AGENTLASSO_SECRET_KEY": SECRET_KEY,
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}",
            **UNLIMITED,
        }
        try:
            key = new_key(database_url)
            from agentlasso.services.api_keys import hash_key

            dataset_id, run_id = asyncio.run(
                build(database_url, hash_key(key), args.cases, args.runs)
            )
            with api_process(database_url, redis_url, env) as (base_url, _pid):
                pages(base_url, key, dataset_id, run_id, args.rounds)
                if args.index:
                    asyncio.run(add_index(database_url))
                    print(f"with {LATENCY_INDEX}:")
                    pages(base_url, key, dataset_id, run_id, args.rounds)
            asyncio.run(explain(database_url, dataset_id, run_id))
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
