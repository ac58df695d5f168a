"""What a run page's charts are drawn from: the agent's latency over the run's results, and the
failed checks by check type. Aggregates in SQL, each over a bounded number of rows.

Latency: a run of up to LATENCIES_READ results is counted whole. A larger one is counted in
the first LATENCIES_READ of its results in case-id order (the primary key): case ids are
random, so these are a random sample of its cases, and a distribution drawn from 5,000 of them
differs from the whole run's by about a percentage point per bucket. Reading all 100,000 of a
large run's rows would take the page 80 ms or more; an index on (run_id, agent_latency_ms)
would let it read only the index instead, still about 15 ms for the two passes.

Failed checks: counted in the run's failed results, found through the (run_id, outcome, seq)
index, the first FAILED_RESULTS_READ of them in arrival order.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor

LATENCIES_READ = 5_000
FAILED_RESULTS_READ = 2_000

_SAMPLE = """
SELECT agent_latency_ms AS ms FROM case_results
WHERE run_id = $1 AND agent_latency_ms IS NOT NULL
ORDER BY test_case_id, trial
LIMIT {limit}
"""

LATENCY_RANGE = f"""
SELECT count(*) AS results, min(ms) AS lowest_ms,
       percentile_disc(0.99) WITHIN GROUP (ORDER BY ms) AS p99_ms, max(ms) AS highest_ms
FROM ({_SAMPLE.format(limit=LATENCIES_READ)}) s
"""

# Bucket i holds edges[i-1] <= ms < edges[i]; len(edges) holds those from the last edge up.
LATENCY_BUCKETS = f"""
SELECT width_bucket(ms, $2::integer[]) AS bucket, count(*) AS results
FROM ({_SAMPLE.format(limit=LATENCIES_READ)}) s
GROUP BY 1
"""

FAILURES_BY_TYPE = """
SELECT k.type, count(*) AS failures
FROM (
    SELECT check_results FROM case_results
    WHERE run_id = $1 AND outcome = 'failed'
    ORDER BY seq
    LIMIT $2
) r
CROSS JOIN LATERAL jsonb_to_recordset(r.check_results) AS k(type text, status text)
WHERE k.status = 'failed'
GROUP BY k.type
ORDER BY count(*) DESC, k.type
"""


class LatencyRange(msgspec.Struct, frozen=True, kw_only=True):
    """The spread of the agent's latency over the results counted (at most LATENCIES_READ)."""

    results: int
    lowest_ms: int | None
    p99_ms: int | None
    highest_ms: int | None


async def latency_range(executor: Executor, run_id: UUID) -> LatencyRange:
    """How many results report the agent's latency, and its spread among them."""
    row = await executor.fetchrow(LATENCY_RANGE, run_id)
    assert row is not None, "an aggregate always has its row"
    return LatencyRange(**dict(row.items()))


async def latency_counts(executor: Executor, run_id: UUID, edges: Sequence[int]) -> dict[int, int]:
    """Results by width_bucket(latency, edges) index, among those latency_range counted."""
    rows = await executor.fetch(LATENCY_BUCKETS, run_id, list(edges))
    return {row["bucket"]: row["results"] for row in rows}


async def failures_by_type(executor: Executor, run_id: UUID) -> list[tuple[str, int]]:
    """(check type, failed checks) in the run's failed results, the most first."""
    rows = await executor.fetch(FAILURES_BY_TYPE, run_id, FAILED_RESULTS_READ)
    return [(row["type"], row["failures"]) for row in rows]
