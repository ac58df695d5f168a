"""Benchmark: GET /api/v1/datasets/{id}/judge-agreement over 100,000 labelled results.

    PYTHONPATH=. .venv/bin/python -m tests.perf.bench_judge_agreement [--results N] [--rounds R]

A real `agentlasso api` process and PostgreSQL. The dataset holds `results` cases, each with one
of four AI-judge criteria, and each case's result is labelled (a review item, a person's label
and their verdict on the criterion; one result in ten by a second person, so majorities and
ties are counted). Filled with SQL in a few statements. Each round asks for the dataset's
agreement (every criterion's figures, the kappa intervals drawn afresh once their counts are
new, the newest disagreements) and times the whole HTTP answer. Target (issue 27): under 200 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import httpx

from agentlasso.db.pool import connect
from tests.perf.harness import new_key, server_urls
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import api_process
from tests.support.web import project_of

TARGET_MS = 200.0
CRITERIA = ("States the refund amount", "Is polite", "Names the order", "Offers a next step")

# Cases, their one revision each, and the criterion each carries (i % 4).
_CASES = """
WITH made AS (
    SELECT i, gen_random_uuid() AS case_id, gen_random_uuid() AS revision_id
    FROM generate_series(1, $2) AS i
), revisions AS (
    INSERT INTO test_case_revisions (id, test_case_id, dataset_id, revision, input, checks)
    SELECT revision_id, case_id, $1, 1, to_jsonb('refund ' || i),
           jsonb_build_array(jsonb_build_object(
               'type', 'llm_judge', 'id', 'c1', 'severity', 'critical',
               'criterion', ($3::text[])[1 + i % 4]))
    FROM made
)
INSERT INTO test_cases (id, dataset_id, current_revision_id)
SELECT case_id, $1, revision_id FROM made
"""
_ITEMS = """
INSERT INTO review_items (id, project_id, run_id, test_case_id, trial, dataset_id, done_at)
SELECT gen_random_uuid(), $1, $3, c.id, 1, $2, now() FROM test_cases c WHERE c.dataset_id = $2
"""
# Everyone labels; one item in ten gets a second person.
_LABELS = """
INSERT INTO review_labels (item_id, reviewer, reviewer_name, verdict)
SELECT i.id, r.reviewer, r.reviewer, NULL
FROM review_items i
CROSS JOIN (VALUES ('user:a'), ('user:b')) AS r (reviewer)
WHERE i.dataset_id = $1 AND (r.reviewer = 'user:a' OR hashtext(i.id::text) % 10 = 0)
"""
# The judge agrees with people about 85% of the time; people pass about 70%.
_CHECK_LABELS = """
INSERT INTO review_check_labels (
    item_id, reviewer, check_id, project_id, dataset_id, test_case_id, revision_id, run_id,
    trial, kind, criterion, human_passed, judge_passed, judge_samples, judge_samples_passed)
SELECT l.item_id, l.reviewer, 'c1', i.project_id, i.dataset_id, i.test_case_id,
       c.current_revision_id, i.run_id, 1, 'llm_judge', r.checks->0->>'criterion',
       h.human, CASE WHEN j.agrees THEN h.item_human ELSE NOT h.item_human END,
       3, abs(hashtext(l.item_id::text || 's')) % 4
FROM review_labels l
JOIN review_items i ON i.id = l.item_id
JOIN test_cases c ON c.id = i.test_case_id
JOIN test_case_revisions r ON r.id = c.current_revision_id
-- Per result: what most people would say, and whether the judge says it; per person: their
-- own verdict, now and then unlike the rest.
CROSS JOIN LATERAL (
    SELECT abs(hashtext(l.item_id::text)) % 10 < 7 AS item_human,
           CASE WHEN abs(hashtext(l.item_id::text || l.reviewer)) % 10 = 0
                THEN abs(hashtext(l.item_id::text)) % 10 >= 7
                ELSE abs(hashtext(l.item_id::text)) % 10 < 7 END AS human
) h
CROSS JOIN LATERAL (SELECT abs(hashtext(l.item_id::text || 'j')) % 100 < 85 AS agrees) j
WHERE i.dataset_id = $1
"""

# What saving each label keeps (app/db/review_items.py), for every item at once.
_VOTES = """
INSERT INTO review_votes (
    item_id, check_id, project_id, dataset_id, test_case_id, revision_id, run_id, trial, kind,
    criterion, judge_passed, yes, votes, samples, samples_passed, labelled_at, notes, current)
SELECT item_id, check_id, project_id, dataset_id, test_case_id, revision_id, run_id, trial,
       kind, criterion, bool_and(judge_passed), count(*) FILTER (WHERE human_passed), count(*),
       max(judge_samples), max(judge_samples_passed), max(created_at), string_agg(note, ' / '),
       true
FROM review_check_labels WHERE dataset_id = $1
GROUP BY item_id, check_id, project_id, dataset_id, test_case_id, revision_id, run_id, trial,
         kind, criterion
"""


async def fill(database_url: str, base_url: str, key: str, results: int) -> str:
    """A dataset of `results` labelled results; its id."""
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}) as api:
        dataset_id = (await api.post("/api/v1/datasets", json={"name": "agreement"})).json()["id"]
    connection = await connect(database_url)
    try:
        project_id = await project_of(connection, key)
        started = time.perf_counter()
        async with connection.transaction():
            await connection.execute(_CASES, dataset_id, results, list(CRITERIA))
            run_id = await connection.fetchval("SELECT gen_random_uuid()")
            await connection.execute(_ITEMS, project_id, dataset_id, run_id)
            await connection.execute(_LABELS, dataset_id)
            await connection.execute(_CHECK_LABELS, dataset_id)
            await connection.execute(_VOTES, dataset_id)
        await connection.execute("ANALYZE")
        labels = await connection.fetchval(
            "SELECT count(*) FROM review_check_labels WHERE dataset_id = $1", dataset_id
        )
        took = time.perf_counter() - started
        print(f"filled {results:,} results, {labels:,} labels in {took:.0f} s")
    finally:
        await connection.close()
    return str(dataset_id)


def measure(base_url: str, key: str, dataset_id: str, rounds: int) -> None:
    """The endpoint's whole answer time, `rounds` times after two to warm up."""
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=60) as api:
        path = f"/api/v1/datasets/{dataset_id}/judge-agreement"
        for _ in range(2):
            api.get(path)
        taken = []
        for _ in range(rounds):
            started = time.perf_counter()
            answer = api.get(path)
            taken.append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, answer.text[:300]
        criteria = answer.json()["criteria"]
    labelled = sum(criterion["labelled"] for criterion in criteria)
    p95 = statistics.quantiles(taken, n=20)[18]
    verdict = "ok" if p95 < TARGET_MS else "OVER"
    print(
        f"judge agreement of {labelled:,} labelled results in {len(criteria)} criteria: "
        f"median {statistics.median(taken):.1f} ms, p95 {p95:.1f} ms ({verdict}, target "
        f"{TARGET_MS:.0f} ms)"
    )
    for criterion in criteria:
        print(
            f"  {criterion['criterion']}: labelled {criterion['labelled']:,}, ties "
            f"{criterion['ties']:,}, kappa {criterion['cohen_kappa']:.3f} "
            f"{criterion['kappa_ci95']}, self-consistency {criterion['self_consistency']:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        try:
            with api_process(database_url, redis_url) as (base_url, _pid):
                key = new_key(database_url)
                dataset_id = asyncio.run(fill(database_url, base_url, key, args.results))
                measure(base_url, key, dataset_id, args.rounds)
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
