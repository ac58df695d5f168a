"""A completed run's judge warnings: the llm_judge criteria it graded, against how far people
have checked each one (contract section 15). Decided once, as the run completes."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db.judge_agreement import criterion_counts
from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.judge_agreement import Agreement, agreement_figures
from agentlasso.domain.judge_trust import doubt_reason, judge_warnings
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


_DOUBT_SETTING = "SELECT doubted_judge_not_graded FROM projects WHERE id = $1"
_STORE_DOUBTED = "UPDATE eval_runs SET doubted_criteria = $2 WHERE id = $1"
_DOUBTED = "SELECT doubted_criteria FROM eval_runs WHERE id = $1"


async def _graded_figures(
    connection: Connection, run: Run
) -> tuple[list[str], dict[str, Agreement]]:
    """The llm_judge criteria the run grades, and people's agreement with the judge on each
    that has labels on current revisions."""
    criteria = [row["criterion"] for row in await connection.fetch(_GRADED_CRITERIA, run.id)]
    figures: dict[str, Agreement] = {}
    if criteria:
        for counts in await criterion_counts(connection, run.project_id, run.dataset_id):
            if counts.current and counts.kind == "llm_judge" and counts.criterion is not None:
                figures[counts.criterion] = agreement_figures(counts.confusion())
    return criteria, figures


async def store_for_run(connection: Connection, run: Run) -> None:
    """Decide and store the run's judge warnings (none when it graded no llm_judge check)."""
    criteria, figures = await _graded_figures(connection, run)
    await connection.execute(_STORE, run.id, judge_warnings(criteria, figures))


async def store_doubted(connection: Connection, run: Run) -> None:
    """As a run starts (its cases pinned), when its project asks for it: the criteria whose
    failures count as not graded in it, each with why."""
    if not await connection.fetchval(_DOUBT_SETTING, run.project_id):
        return
    criteria, figures = await _graded_figures(connection, run)
    reasons = {criterion: doubt_reason(criterion, figures.get(criterion)) for criterion in criteria}
    doubted = {criterion: reason for criterion, reason in reasons.items() if reason is not None}
    if doubted:
        await connection.execute(_STORE_DOUBTED, run.id, doubted)


async def doubted_criteria(executor: Executor, run_id: UUID) -> dict[str, str]:
    """The run's doubted criteria, each with why its failures are not graded."""
    doubted: dict[str, str] | None = await executor.fetchval(_DOUBTED, run_id)
    return doubted or {}
