"""Cases whose verdict flips from run to run while neither the case nor the agent changed: the
recent completed runs of a dataset, each case's verdict in each (at the case's current
revision), and how often it differs from the run before."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db.pool import Executor
from agentlasso.domain.comparisons import FlakyCase

# A case passes in a run when every trial passed. Runs are told apart by agent (a CI run's is
# its client's own: null), so a new agent is never taken for a flaky case. A run whose trials
# of the case disagree counts as a flip too.
_FLAKY = """
WITH recent AS (
    SELECT id, seq, agent_id FROM eval_runs
    WHERE project_id = $1 AND dataset_id = $2 AND status = 'completed'
    ORDER BY seq DESC
    LIMIT $3
), candidates AS (
    -- Only a case that did not pass somewhere can flip: found through the outcome index, so
    -- the cases that always passed (most of a healthy dataset) are never read.
    SELECT DISTINCT r.test_case_id
    FROM recent JOIN case_results r
      ON r.run_id = recent.id AND r.outcome IN ('failed', 'not_graded')
), verdicts AS (
    SELECT r.test_case_id, recent.agent_id, recent.seq,
           bool_and(r.outcome = 'passed') AS passed,
           bool_or(r.outcome = 'passed') AND NOT bool_and(r.outcome = 'passed') AS split
    FROM candidates k
    CROSS JOIN recent
    JOIN case_results r ON r.run_id = recent.id AND r.test_case_id = k.test_case_id
    JOIN test_cases c ON c.id = r.test_case_id AND c.current_revision_id = r.revision_id
    GROUP BY r.test_case_id, recent.agent_id, recent.seq
), ordered AS (
    SELECT test_case_id, passed, split,
           lag(passed) OVER (PARTITION BY test_case_id, agent_id ORDER BY seq) AS before
    FROM verdicts
), flakiest AS (
    SELECT test_case_id, count(*) AS runs,
           count(*) FILTER (WHERE split OR passed <> before) AS flips,
           count(*) FILTER (WHERE passed) AS passed
    FROM ordered
    GROUP BY test_case_id
    HAVING count(*) FILTER (WHERE split OR passed <> before) > 0
    ORDER BY count(*) FILTER (WHERE split OR passed <> before)::float / count(*) DESC,
             test_case_id
    LIMIT $4
)
SELECT f.test_case_id, f.runs, f.flips, f.passed, v.description,
       -- A conversation has no input: its first user message (scripted, or the opening).
       left(coalesce(v.input, v.conversation #> '{turns,0,user}',
                     v.conversation #> '{simulated_user,opening}') #>> '{}', 160) AS input
FROM flakiest f
JOIN test_cases c ON c.id = f.test_case_id
JOIN test_case_revisions v ON v.id = c.current_revision_id
ORDER BY f.flips::float / f.runs DESC, f.test_case_id
"""


async def flaky_cases(
    executor: Executor, project_id: UUID, dataset_id: UUID, runs: int, limit: int
) -> list[FlakyCase]:
    """The dataset's flakiest cases over its last `runs` completed runs, flakiest first."""
    rows = await executor.fetch(_FLAKY, project_id, dataset_id, runs, limit)
    return [FlakyCase(**dict(row.items())) for row in rows]
