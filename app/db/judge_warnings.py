"""A completed run's judge warnings: the llm_judge criteria it graded, against how far people
have checked each one (contract section 15). Decided once, as the run completes."""

from __future__ import annotations

from agentlasso.db.judge_agreement import criterion_counts
from agentlasso.db.pool import Connection
from agentlasso.domain.judge_agreement import Agreement, agreement_figures
from agentlasso.domain.judge_trust import judge_warnings
from agentlasso.domain.runs import Run

# The distinct criteria of the revisions the run graded, in their first case's order.
_GRADED_CRITERIA = """
SELECT criterion FROM (
    SELECT c.value->>'criterion' AS criterion, min(erc.position) AS first
    FROM eval_run_cases erc
    JOIN test_case_revisions r ON r.id = erc.revision_id
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(r.checks) = 'array' THEN r.checks ELSE '[]'::jsonb END
    ) c
    WHERE erc.run_id = $1 AND c.value->>'type' = 'llm_judge'
    GROUP BY 1
) graded ORDER BY first, criterion
"""
_STORE = "UPDATE eval_runs SET judge_warnings = $2 WHERE id = $1"


async def store_for_run(connection: Connection, run: Run) -> None:
    """Decide and store the run's judge warnings (none when it graded no llm_judge check)."""
    criteria = [row["criterion"] for row in await connection.fetch(_GRADED_CRITERIA, run.id)]
    figures: dict[str, Agreement] = {}
    if criteria:
        for counts in await criterion_counts(connection, run.project_id, run.dataset_id):
            if counts.current and counts.kind == "llm_judge" and counts.criterion is not None:
                figures[counts.criterion] = agreement_figures(counts.confusion())
    await connection.execute(_STORE, run.id, judge_warnings(criteria, figures))
