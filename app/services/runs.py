"""Reading, following and cancelling runs."""

from __future__ import annotations

import asyncio
from uuid import UUID

import msgspec

from agentlasso.db import case_results, result_rows, run_gates
from agentlasso.db import runs as run_rows
from agentlasso.db import test_cases as case_rows
from agentlasso.domain.case_results import StoredResult, TrialSummary
from agentlasso.domain.grades import Gate
from agentlasso.domain.runs import Run
from agentlasso.domain.web import ResultFilter, ResultRow, Revision
from agentlasso.errors import NotFound
from agentlasso.grading import run_gate
from agentlasso.services.platform import Platform
from agentlasso.services.run_settling import settle_if_due

_MISSING = "No run with this id in your project."


async def get_run(platform: Platform, project_id: UUID, run_id: UUID) -> Run:
    """The run, or NotFound; settled first when its stores moved it on (run_settling)."""
    run = await run_rows.get_run(platform.pool, project_id, run_id)
    if run is None:
        raise NotFound(_MISSING)
    return await settle_if_due(platform.pool, run)


async def list_runs(
    platform: Platform,
    project_id: UUID,
    dataset_id: UUID | None,
    status: str | None,
    before_seq: int | None,
    limit: int,
    ci_pass: bool | None = None,
) -> list[Run]:
    """A page of runs, newest first; `ci_pass` True or False: only runs whose gate passed, or
    only those whose gate did not."""
    runs = await run_rows.list_runs(
        platform.pool, project_id, dataset_id, status, before_seq, limit, ci_pass
    )
    return [await settle_if_due(platform.pool, run) for run in runs]


async def list_results(
    platform: Platform,
    project_id: UUID,
    run_id: UUID,
    after_seq: int,
    outcome: str | None,
    limit: int,
) -> tuple[list[StoredResult], dict[UUID, TrialSummary]]:
    """A page of the run's case results, optionally only one outcome, and the trials of each
    of their cases taken together."""
    await get_run(platform, project_id, run_id)
    page = await case_results.list_results(platform.pool, run_id, after_seq, outcome, limit)
    trials = await case_results.trial_summaries(
        platform.pool, run_id, [result.test_case_id for result in page]
    )
    return page, trials


# Outcomes in the order a run's page lists them: what a person opening a failed gate came for
# first, then what could not be judged, then the rest.
OUTCOME_ORDER = ("failed", "not_graded", "passed")


class ResultPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a run's results; `next_after` is where the next page starts, None at the end.
    `stopped_early` says the page is short because the scan stopped, not because nothing is
    left."""

    rows: list[ResultRow]
    next_after: tuple[str, int] | None
    stopped_early: bool


async def result_page(
    platform: Platform, run: Run, after: tuple[str, int] | None, chosen: ResultFilter, limit: int
) -> ResultPage:
    """A page of a run (got in its project): one outcome, or all with the failures first."""
    outcomes = (chosen.outcome,) if chosen.outcome else OUTCOME_ORDER
    start, after_seq = after or (outcomes[0], 0)
    if start not in outcomes:
        return ResultPage(rows=[], next_after=None, stopped_early=False)
    rows: list[ResultRow] = []
    hits = await result_rows.search_hits(platform.pool, run.dataset_id, chosen.text)
    for outcome in outcomes[outcomes.index(start) :]:
        found, stopped_at = await result_rows.result_rows(
            platform.pool, run.id, outcome, after_seq, chosen, limit + 1 - len(rows), hits
        )
        rows += found
        if len(rows) > limit:
            last = rows[limit - 1]
            return ResultPage(rows=rows[:limit], next_after=(last.outcome, last.seq),
                              stopped_early=False)  # fmt: skip
        if stopped_at is not None:
            return ResultPage(rows=rows, next_after=(outcome, stopped_at), stopped_early=True)
        after_seq = 0
    return ResultPage(rows=rows, next_after=None, stopped_early=False)


async def graded_revisions(platform: Platform, results: list[StoredResult]) -> dict[UUID, Revision]:
    """The revisions these results (read in their project) graded, by id, in one query."""
    return await case_rows.revisions_by_id(
        platform.pool, list({result.revision_id for result in results})
    )


async def result_of_case(
    platform: Platform, project_id: UUID, run_id: UUID, test_case_id: UUID, trial: int
) -> tuple[Run, StoredResult, Revision]:
    """The run, one case's result in it, and the revision of the case that was graded."""
    run = await get_run(platform, project_id, run_id)
    result = await case_results.get_result(platform.pool, run.id, test_case_id, trial)
    if result is None:
        raise NotFound("This run has no result for this test case.")
    graded = await case_rows.revisions_by_id(platform.pool, [result.revision_id])
    return run, result, graded[result.revision_id]


async def cancel_run(platform: Platform, project_id: UUID, run_id: UUID) -> Run:
    """Cancel a run that has not finished; its results so far are kept."""
    async with platform.pool.acquire() as connection, connection.transaction():
        run = await run_rows.lock_run(connection, project_id, run_id)
        if run is None:
            raise NotFound(_MISSING)
        if run.is_final:
            return run
        # What stores counted so far goes into the row with the run's last gate.
        run = await run_gates.take_in(connection, run_id)
        gate = run_gate(run)
        cancelled = Gate(pass_rate=gate.pass_rate, ci_pass=False, ci_fail_reason=_cancelled(gate))
        return await run_rows.set_verdict(connection, run_id, "cancelled", cancelled)


def _cancelled(gate: Gate) -> str:
    return "The run was cancelled before it finished." + (
        f" {gate.ci_fail_reason}" if gate.ci_fail_reason else ""
    )


async def wait_for_run(platform: Platform, project_id: UUID, run_id: UUID, wait_s: float) -> Run:
    """The run once it reaches a final status, or as it stands after `wait_s` seconds."""
    run = await get_run(platform, project_id, run_id)
    if run.is_final or wait_s <= 0:
        return run
    async with platform.watcher.subscribe(run_id, project_id) as events:
        # Read again once subscribed: the run may have ended between the first read and now.
        run = await get_run(platform, project_id, run_id)
        deadline = asyncio.get_running_loop().time() + wait_s
        while not run.is_final:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                break
            try:
                event = await asyncio.wait_for(events.get(), remaining)
            except TimeoutError:
                break
            if event.kind == "shutdown":
                break
            run = event.run or run
    return run
