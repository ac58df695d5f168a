"""What a run's case card reads beyond the result: the dataset's data context and the case now."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db.pool import Executor
from agentlasso.domain.web import CaseNow

# Three primary-key lookups in one round trip. The dataset row outlives its deletion (runs keep
# it); a deleted case has no row in test_cases, only the revisions its runs pinned.
_CASE_NOW = """
SELECT d.data_context, r.revision AS current_revision
FROM datasets d
LEFT JOIN test_cases c ON c.id = $3 AND c.dataset_id = d.id
LEFT JOIN test_case_revisions r ON r.id = c.current_revision_id
WHERE d.project_id = $1 AND d.id = $2
"""


async def case_now(
    executor: Executor, project_id: UUID, dataset_id: UUID, test_case_id: UUID
) -> CaseNow:
    """The case's dataset context and current revision (both None when nothing is found)."""
    row = await executor.fetchrow(_CASE_NOW, project_id, dataset_id, test_case_id)
    if row is None:
        return CaseNow(data_context=None, current_revision=None)
    return CaseNow(data_context=row["data_context"], current_revision=row["current_revision"])
