"""A conversation's traces: those of a project sharing one conversation id, in time order."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from agentlasso.db.pool import Executor
from agentlasso.db.traces import TraceRow, trace_row

_TRACES = """
SELECT trace_id, name, input, output, messages, tool_calls, model, usage, error, started_at,
       duration_ms, span_count, received_at, cuts, conversation_id
FROM traces WHERE project_id = $1 AND conversation_id = $2
ORDER BY started_at, trace_id
LIMIT $3
"""


async def conversation_traces(
    executor: Executor, project_id: UUID, conversation_id: str, limit: int
) -> tuple[list[TraceRow], bool]:
    """The first `limit` traces of the conversation, earliest first, and whether more follow."""
    rows = await executor.fetch(_TRACES, project_id, conversation_id, limit + 1)
    return [trace_row(row) for row in rows[:limit]], len(rows) > limit


_IDS = """
SELECT trace_id FROM traces WHERE project_id = $1 AND conversation_id = $2
ORDER BY started_at, trace_id
LIMIT $3
"""


async def conversation_trace_ids(
    executor: Executor, project_id: UUID, conversation_id: str, limit: int
) -> list[str]:
    """The ids of the conversation's first `limit` traces, earliest first (nothing else read)."""
    rows = await executor.fetch(_IDS, project_id, conversation_id, limit)
    return [row["trace_id"] for row in rows]


_CASES_FROM = """
SELECT c.id, c.dataset_id, d.name AS dataset_name
FROM test_cases c JOIN datasets d ON d.id = c.dataset_id
WHERE c.source_trace_id = ANY($2::text[]) AND d.project_id = $1 AND d.deleted_at IS NULL
ORDER BY c.created_at
LIMIT 100
"""


async def cases_from_traces(
    executor: Executor, project_id: UUID, trace_ids: Sequence[str]
) -> list[tuple[UUID, UUID, str]]:
    """The project's test cases made from any of these traces: (case, dataset, dataset name)."""
    rows = await executor.fetch(_CASES_FROM, project_id, list(trace_ids))
    return [(row["id"], row["dataset_id"], row["dataset_name"]) for row in rows]
