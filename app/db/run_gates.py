"""A run settling: its tallies taken into its row, its status and gate decided and stored.

One writer at a time settles a run, under its row lock, reading it in a statement after the lock
is held: it sees every store committed before it. Stores never take that lock, so the store
that completes a run cannot settle it in its own transaction (another store may be committing
beside it, unseen); whoever reads the run next settles it: the lane whose work ended, the judge
chunk that stored, a CI batch, the reaper's round, or an API reader (app/services/run_settling.py).
"""

from __future__ import annotations

from uuid import UUID

from agentlasso.db import comparisons, judge_warnings, run_counts
from agentlasso.db import runs as run_rows
from agentlasso.db.pool import Connection
from agentlasso.domain.runs import Run
from agentlasso.grading import run_gate, settled_status

# A case passes when every trial passed; it is graded when a trial was; its trials disagree
# when some passed and some did not.
_COUNT_CASES = """
WITH per_case AS (
    SELECT bool_or(graded) AS graded, bool_and(outcome = 'passed') AS every_trial,
           bool_or(outcome = 'passed') AS some_trial
    FROM case_results WHERE run_id = $1 GROUP BY test_case_id
)
UPDATE eval_runs SET
    cases_graded = (SELECT count(*) FROM per_case WHERE graded),
    cases_passed = (SELECT count(*) FROM per_case WHERE graded AND every_trial),
    cases_passed_any = (SELECT count(*) FROM per_case WHERE graded AND some_trial),
    flaky_count = (SELECT count(*) FROM per_case WHERE some_trial AND NOT every_trial)
WHERE id = $1
"""

# One trial a case: its results are its cases, and the counters (as read) count them.
_CASES_ARE_RESULTS = """
UPDATE eval_runs SET cases_graded = $2, cases_passed = $3, cases_passed_any = $3, flaky_count = 0
WHERE id = $1
"""

_SET_NEW_FAILURES = "UPDATE eval_runs SET new_failures = $2 WHERE id = $1"


async def store_gate(connection: Connection, run: Run) -> Run:
    """Recompute the gate from the counters; a run with every result in is completed, and then
    compared with its baseline (its new failures are what a no_new_failures gate decides on)."""
    status = settled_status(run)
    if status == "completed":
        if run.trials > 1:
            await connection.execute(_COUNT_CASES, run.id)
        else:
            await connection.execute(_CASES_ARE_RESULTS, run.id, run.graded, run.passed)
        await _compare_with_baseline(connection, run)
        await judge_warnings.store_for_run(connection, run)
        run = await _reread(connection, run.id)
    return await run_rows.set_verdict(connection, run.id, status, run_gate(run))


async def settle(connection: Connection, run_id: UUID) -> tuple[Run, bool] | None:
    """Take the run's tallies into its row and store its status and gate, holding its row until
    the transaction ends; with whether it ended now. None when the run is gone."""
    held = await run_rows.lock_run_by_id(connection, run_id)
    if held is None:
        return None
    folded = await run_counts.fold(connection, [run_id])
    run = await _reread(connection, run_id)
    if run.is_final and not folded:
        return run, False  # ended, and nothing counted since: its gate stands as stored
    settled = await store_gate(connection, run)
    return settled, settled.is_final and not run.is_final


async def take_in(connection: Connection, run_id: UUID) -> Run:
    """Fold the run's tallies into its row and read it (a writer holding the run's row lock
    that ends it or decides its gate itself: a cancel, a CI batch)."""
    await run_counts.fold(connection, [run_id])
    return await _reread(connection, run_id)


async def _reread(connection: Connection, run_id: UUID) -> Run:
    run = await run_rows.run_by_id(connection, run_id)
    assert run is not None, "a run held under its row lock is still there"
    return run


async def _compare_with_baseline(connection: Connection, run: Run) -> None:
    """Count the run's new failures against its baseline (none without one). Comparisons kept
    of the run, either side, are dropped first: its results have just changed."""
    await comparisons.forget_comparisons(connection, run.id)
    new_failures = 0
    if run.baseline_run_id is not None:
        compared = await comparisons.compare(connection, run.id, run.baseline_run_id)
        new_failures = compared.new_failures
    await connection.execute(_SET_NEW_FAILURES, run.id, new_failures)
