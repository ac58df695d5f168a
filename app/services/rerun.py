"""Running a run's dataset again with the same agent and settings: every case, or only those
that failed (at their current revisions, so a fixed check is what gets graded; a run of a
dataset version runs that version's revisions again)."""

from __future__ import annotations

from uuid import UUID

from agentlasso.domain.runs import Run
from agentlasso.errors import Conflict
from agentlasso.services import agents as agent_service
from agentlasso.services.platform import Platform
from agentlasso.services.runs import get_run
from agentlasso.services.start_run import NewRun, start_run


async def run_again(
    platform: Platform,
    project_id: UUID,
    run_id: UUID,
    *,
    only_failed: bool,
    idempotency_key: str | None,
) -> Run:
    """A new server-mode run like this one. A CI-mode run had no agent of ours: its re-run
    calls the project's default agent."""
    source = await get_run(platform, project_id, run_id)
    if only_failed and source.failed + source.errored == 0:
        raise Conflict("This run has no failed cases to run again.")
    agent_id = source.agent_id or await _default_agent_id(platform, project_id)
    labels = {**(source.labels or {}), "rerun_of": str(source.id)}
    # The same cases again: the same version, and (for every case) the same tags; the failed
    # ones are those that ran, so tags edited since do not drop any.
    tags = None if only_failed or source.tags is None else tuple(source.tags)
    version = None if source.dataset_version_id is None else str(source.dataset_version_id)
    request = NewRun(
        dataset_id=source.dataset_id, pass_threshold=source.pass_threshold, agent_id=agent_id,
        trials=source.trials, concurrency=source.concurrency, labels=labels,
        judge_cache=source.judge_use_cache, gate=source.gate, tags=tags,
        dataset_version=version,
    )  # fmt: skip
    failed_in = source.id if only_failed else None
    started = await start_run(platform, project_id, request, idempotency_key, failed_in)
    return started.run


async def _default_agent_id(platform: Platform, project_id: UUID) -> UUID:
    agent = await agent_service.default_agent(platform, project_id)
    if agent is None:
        raise Conflict("A run calls your agent: register it under Settings, Your agent, first.")
    return agent.id
