"""The agent's own trace of a call behind a case result (contract section 14), found by the
trace id the call's traceparent carried, whichever arrived first: the spans or the result."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from agentlasso.db import traced_results
from agentlasso.db import traces as trace_rows
from agentlasso.db.traced_results import TracedResult
from agentlasso.errors import NotFound
from agentlasso.services import traces as trace_service
from agentlasso.services.platform import Platform
from agentlasso.services.traces import TraceView


async def agent_trace(
    platform: Platform, project_id: UUID, trace_id: str | None
) -> TraceView | None:
    """The trace of that id with its spans; None when no call carried one, or when the agent
    has not exported (or never exports) spans under it."""
    if trace_id is None:
        return None
    try:
        return await trace_service.get_trace(platform, project_id, trace_id)
    except NotFound:
        return None


async def arrived(platform: Platform, project_id: UUID, trace_ids: Sequence[str]) -> set[str]:
    """Which of these trace ids have spans in the project (a conversation's, turn by turn)."""
    if not trace_ids:
        return set()
    found = await trace_rows.get_traces(platform.pool, project_id, list(trace_ids))
    return set(found)


async def results_of_trace(
    platform: Platform, project_id: UUID, trace_id: str
) -> list[TracedResult]:
    """The case results whose agent calls carried this trace id, newest run first."""
    return await traced_results.results_of_trace(platform.pool, project_id, trace_id.lower())
