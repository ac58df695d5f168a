"""Comparing a run with a baseline run of its dataset: bucket counts, and the cases a page at a
time with both results."""

from __future__ import annotations

from uuid import UUID

import msgspec

from agentlasso.db import case_results
from agentlasso.db import comparisons as comparison_rows
from agentlasso.db import flaky_cases as flaky_rows
from agentlasso.domain.case_results import StoredResult, TrialSummary
from agentlasso.domain.comparisons import (
    BUCKETS,
    Bucket,
    ComparedCase,
    ComparedRow,
    Comparison,
    FlakyCase,
)
from agentlasso.domain.runs import Run
from agentlasso.errors import Conflict, FieldError, InvalidInput, NotFound
from agentlasso.services.datasets import get_dataset
from agentlasso.services.platform import Platform
from agentlasso.services.runs import get_run


class ComparisonPage(msgspec.Struct, frozen=True, kw_only=True):
    """A comparison's counts and a page of its cases; `after` continues it, None at the end.
    With no baseline, every case of the run is new and `comparison` is None."""

    run: Run
    baseline: Run | None
    counts: dict[Bucket, int]
    cases: list[ComparedCase]
    after: tuple[int, int] | None


async def compare_runs(
    platform: Platform,
    project_id: UUID,
    run_id: UUID,
    baseline_id: UUID | None,
    bucket: Bucket | None,
    after: tuple[int, int],
    limit: int,
) -> ComparisonPage:
    """The run compared with `baseline_id`, or with its own baseline when that is None."""
    run = await get_run(platform, project_id, run_id)
    baseline = await _baseline(platform, project_id, run, baseline_id)
    if baseline is None:
        return await _all_new(platform, run, bucket, after, limit)
    comparison = await _comparison(platform, run, baseline)
    buckets = (bucket,) if bucket else BUCKETS
    rows = await comparison_rows.compared_page(
        platform.pool, run.id, baseline.id, buckets, after, limit + 1
    )
    more = len(rows) > limit
    rows = rows[:limit]
    cases = await _with_results(platform, run.id, baseline.id, rows)
    last = rows[-1] if rows else None
    return ComparisonPage(
        run=run, baseline=baseline, counts=comparison.counts, cases=cases,
        after=(BUCKETS.index(last.bucket) + 1, last.seq) if more and last else None,
    )  # fmt: skip


async def _baseline(
    platform: Platform, project_id: UUID, run: Run, baseline_id: UUID | None
) -> Run | None:
    """The baseline asked for (a run of the same dataset in the project), else the run's own."""
    chosen = baseline_id or run.baseline_run_id
    if chosen is None:
        return None
    try:
        baseline = await get_run(platform, project_id, chosen)
    except NotFound:
        detail = "No run with this id in your project."
        raise NotFound(detail, [FieldError(parameter="baseline", detail=detail)]) from None
    if baseline.dataset_id != run.dataset_id:
        raise _bad_baseline("The baseline must be a run of the same dataset.")
    return baseline


def _bad_baseline(detail: str) -> InvalidInput:
    return InvalidInput(detail, [FieldError(parameter="baseline", detail=detail)])


async def _comparison(platform: Platform, run: Run, baseline: Run) -> Comparison:
    kept = await comparison_rows.get_comparison(platform.pool, run.id, baseline.id)
    if kept is not None:
        return kept
    if not (run.is_final and baseline.is_final):
        raise Conflict(
            "A run is compared once it and its baseline have ended; wait for the run "
            "(GET /api/v1/eval-runs/{id}?wait_s=...) and ask again."
        )
    async with platform.pool.acquire() as connection, connection.transaction():
        return await comparison_rows.compare(connection, run.id, baseline.id)


async def _with_results(
    platform: Platform, run_id: UUID, baseline_id: UUID, rows: list[ComparedRow]
) -> list[ComparedCase]:
    current = await case_results.results_by_key(
        platform.pool, run_id,
        [(row.test_case_id, row.current_trial) for row in rows if row.current_trial],
    )  # fmt: skip
    before = await case_results.results_by_key(
        platform.pool, baseline_id,
        [(row.test_case_id, row.baseline_trial) for row in rows if row.baseline_trial],
    )  # fmt: skip
    cases = [row.test_case_id for row in rows]
    trials_now = await case_results.trial_summaries(platform.pool, run_id, cases)
    trials_before = await case_results.trial_summaries(platform.pool, baseline_id, cases)
    return [
        ComparedCase(
            row=row,
            current=current.get((row.test_case_id, row.current_trial or 0)),
            baseline=before.get((row.test_case_id, row.baseline_trial or 0)),
            current_trials=trials_now.get(row.test_case_id),
            baseline_trials=trials_before.get(row.test_case_id),
        )
        for row in rows
    ]


async def _all_new(
    platform: Platform, run: Run, bucket: Bucket | None, after: tuple[int, int], limit: int
) -> ComparisonPage:
    """With no baseline, each case of the run is a new case (its first trial shown)."""
    new_case = BUCKETS.index("new_case") + 1
    counts = dict.fromkeys(BUCKETS, 0)
    counts["new_case"] = await case_results.count_cases(platform.pool, run.id)
    if bucket not in (None, "new_case") or after[0] > new_case:
        return ComparisonPage(run=run, baseline=None, counts=counts, cases=[], after=None)
    after_seq = after[1] if after[0] == new_case else 0
    firsts = await case_results.first_trials(platform.pool, run.id, after_seq, limit + 1)
    trials = await case_results.trial_summaries(
        platform.pool, run.id, [result.test_case_id for result in firsts[:limit]]
    )
    cases = [_new_case(result, trials.get(result.test_case_id)) for result in firsts[:limit]]
    more = len(firsts) > limit
    return ComparisonPage(
        run=run, baseline=None, counts=counts, cases=cases,
        after=(new_case, cases[-1].row.seq) if more else None,
    )  # fmt: skip


def _new_case(result: StoredResult, trials: TrialSummary | None) -> ComparedCase:
    row = ComparedRow(
        test_case_id=result.test_case_id, bucket="new_case", seq=result.seq,
        revision_changed=False, current_trial=result.trial, baseline_trial=None,
    )  # fmt: skip
    return ComparedCase(row=row, current=result, baseline=None, current_trials=trials)


async def flaky_cases(
    platform: Platform, project_id: UUID, dataset_id: UUID, runs: int, limit: int
) -> list[FlakyCase]:
    """The dataset's cases whose verdict flipped over its last `runs` completed runs with no
    change to the case or the agent, flakiest first (NotFound: not the project's dataset)."""
    await get_dataset(platform, project_id, dataset_id)
    return await flaky_rows.flaky_cases(platform.pool, project_id, dataset_id, runs, limit)
