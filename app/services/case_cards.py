"""A run's case card: one result, the revision it graded, and what has become of the case."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db import case_card_reads
from agentlasso.domain.case_results import StoredResult
from agentlasso.domain.runs import Run
from agentlasso.domain.web import Revision
from agentlasso.services import agent_traces
from agentlasso.services import runs as run_service
from agentlasso.services.platform import Platform
from agentlasso.services.traces import TraceView


class CaseCard(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the card shows, read in four primary-key lookups."""

    run: Run
    result: StoredResult
    # The revision of the case the run graded.
    graded: Revision
    data_context: dict[str, Any] | None
    # The case's revision now; None when it has been deleted since.
    current_revision: int | None
    # The agent's own trace of the call (a single-turn result), when its spans have arrived.
    agent_trace: TraceView | None = None
    # A conversation's: (turn, its call's trace id, whether spans under that id have arrived).
    turn_traces: tuple[tuple[int, str, bool], ...] = ()

    @property
    def case_changed(self) -> bool:
        """Whether the case has a newer revision than the one graded."""
        return self.current_revision is not None and self.current_revision != self.graded.revision


async def case_card(
    platform: Platform, project_id: UUID, run_id: UUID, test_case_id: UUID, trial: int
) -> CaseCard:
    """One case's result in a run, or NotFound (another project's run included)."""
    run, result, graded = await run_service.result_of_case(
        platform, project_id, run_id, test_case_id, trial
    )
    now = await case_card_reads.case_now(platform.pool, project_id, run.dataset_id, test_case_id)
    turn_ids = [
        (t.turn, t.agent_trace_id) for t in result.turns or () if isinstance(t.agent_trace_id, str)
    ]
    here = await agent_traces.arrived(platform, project_id, [trace for _, trace in turn_ids])
    return CaseCard(
        run=run,
        result=result,
        graded=graded,
        data_context=now.data_context,
        current_revision=now.current_revision,
        agent_trace=await agent_traces.agent_trace(platform, project_id, result.agent_trace_id),
        turn_traces=tuple((turn, trace, trace in here) for turn, trace in turn_ids),
    )
