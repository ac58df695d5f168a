"""The case results whose agent calls carried a given trace id (contract section 14): what a
trace's page links back to."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor

# The GIN index on agent_trace_ids answers the containment; the run keeps it in the project.
_RESULTS_OF_TRACE = """
SELECT c.run_id, c.test_case_id, c.trial, c.outcome, r.seq AS run_seq
FROM case_results c JOIN eval_runs r ON r.id = c.run_id
WHERE c.agent_trace_ids @> $2::jsonb AND r.project_id = $1
ORDER BY r.seq DESC, c.seq
LIMIT $3
"""


class TracedResult(msgspec.Struct, frozen=True, kw_only=True):
    """A case result one of whose agent calls carried the trace."""

    run_id: UUID
    test_case_id: UUID
    trial: int
    outcome: str
    run_seq: int


async def results_of_trace(
    executor: Executor, project_id: UUID, trace_id: str, limit: int = 20
) -> list[TracedResult]:
    """The project's case results that called the agent with this trace id, newest run first."""
    wanted: Any = [trace_id]
    rows = await executor.fetch(_RESULTS_OF_TRACE, project_id, wanted, limit)
    return [TracedResult(**row) for row in rows]
