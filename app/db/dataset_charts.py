"""What a dataset page's charts are drawn from: the pass rate of its last runs, and how often
each of its criteria failed in them.

A run's pass rate comes from its counters (its row plus its tallies, as the runs list reads
them, app/db/run_counts.py): no result is read for it.

Each criterion's failure rate cannot be counted over every result of 50 runs (5 million rows of
jsonb for a dataset of 100,000 cases) while the page waits, and no per-check counter is stored.
So it is counted in a sample: RESULTS_SAMPLED_PER_RUN results of each run, read through the
primary key (run_id, test_case_id, trial) in case-id order from a point set by the run's own id
and wrapping round. Case ids are random (uuid4), so each run's sample is a random set of its
cases, a different set per run (about 1,000 cases in all over 50 runs) and the same one each
time the page is drawn. Its cost is bounded by the sample's size whatever the runs hold: index
range scans, one lookup per sampled case's revision, and the jsonb of 1,000 results. A run of
fewer results is counted whole.

A criterion is a check as it is written, but for its id and severity: the same AI-judge
criterion, expected phrase or tool across cases counts as one. A check result is matched to
the check by its id in the revision the result was graded against (a conversation's turn
checks are not in the revision's `checks`, and are left out).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor
from agentlasso.db.run_counts import TALLIES_OF, run_column

RUNS_CHARTED = 50
RESULTS_SAMPLED_PER_RUN = 20
CRITERIA_CHARTED = 10

# The dataset's newest runs (eval_runs_dataset_seq_idx), their counters with their tallies.
RUN_PASS_RATES = f"""
SELECT r.id, r.seq, r.created_at, r.status, {run_column("passed")}, {run_column("graded")}
FROM (
    SELECT * FROM eval_runs
    WHERE project_id = $1 AND dataset_id = $2
    ORDER BY seq DESC
    LIMIT $3
) r
LEFT JOIN LATERAL ({TALLIES_OF.format("r.id")}) t ON true
ORDER BY r.seq
"""

CRITERION_FAILURES = """
WITH recent AS (
    SELECT id FROM eval_runs
    WHERE project_id = $1 AND dataset_id = $2
    ORDER BY seq DESC
    LIMIT $3
), sampled AS MATERIALIZED (
    -- From the run's own id on in case-id order, then from the start: each Limit stops the
    -- index scan under it as soon as the sample is full.
    SELECT s.revision_id, s.check_results
    FROM recent CROSS JOIN LATERAL (
        (SELECT revision_id, check_results FROM case_results
         WHERE run_id = recent.id AND test_case_id >= recent.id
         ORDER BY test_case_id LIMIT $4)
        UNION ALL
        (SELECT revision_id, check_results FROM case_results
         WHERE run_id = recent.id AND test_case_id < recent.id
         ORDER BY test_case_id LIMIT $4)
        LIMIT $4
    ) s
), counted AS (
    SELECT s.revision_id, k.id, count(*) AS graded,
           count(*) FILTER (WHERE k.status = 'failed') AS failed
    FROM sampled s CROSS JOIN LATERAL jsonb_to_recordset(s.check_results) AS k(id text, status text)
    WHERE k.status <> 'not_graded'
    GROUP BY s.revision_id, k.id
), written AS (
    -- Each sampled revision looked up once, by primary key.
    SELECT id, checks FROM test_case_revisions
    WHERE id IN (SELECT revision_id FROM sampled) AND checks IS NOT NULL
)
SELECT d.written - 'id' - 'severity' AS criterion,
       sum(c.graded)::integer AS graded, sum(c.failed)::integer AS failed
FROM written w
CROSS JOIN LATERAL jsonb_array_elements(w.checks) AS d(written)
JOIN counted c ON c.revision_id = w.id AND c.id = d.written ->> 'id'
GROUP BY 1
HAVING sum(c.failed) > 0
ORDER BY sum(c.failed)::float8 / sum(c.graded) DESC, sum(c.failed) DESC
LIMIT $5
"""


class RunPassCount(msgspec.Struct, frozen=True, kw_only=True):
    """A run's results passed out of those graded, as its counters stand."""

    id: UUID
    seq: int
    created_at: datetime
    status: str
    passed: int
    graded: int


class CriterionFailures(msgspec.Struct, frozen=True, kw_only=True):
    """A criterion (a check as written, without its id and severity), and how many of the
    sampled results that graded it failed it."""

    criterion: dict[str, Any]
    graded: int
    failed: int


async def run_pass_counts(
    executor: Executor, project_id: UUID, dataset_id: UUID, runs: int = RUNS_CHARTED
) -> list[RunPassCount]:
    """The dataset's newest `runs` runs, oldest first, with their pass counts."""
    rows = await executor.fetch(RUN_PASS_RATES, project_id, dataset_id, runs)
    return [RunPassCount(**dict(row.items())) for row in rows]


async def criterion_failures(
    executor: Executor,
    project_id: UUID,
    dataset_id: UUID,
    runs: int = RUNS_CHARTED,
    per_run: int = RESULTS_SAMPLED_PER_RUN,
    limit: int = CRITERIA_CHARTED,
) -> list[CriterionFailures]:
    """The criteria failed most often in the sample of the newest `runs` runs' results, by
    failure rate, highest first (those never failed are left out)."""
    rows = await executor.fetch(CRITERION_FAILURES, project_id, dataset_id, runs, per_run, limit)
    return [CriterionFailures(**dict(row.items())) for row in rows]
