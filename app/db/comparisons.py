"""Comparisons of a run with a baseline, computed in one statement over both runs' results and
kept: a 100,000-case comparison is read a page at a time through an index, never recomputed.

A case passes in a run when every one of its trials passed; its trials disagree (flaky) when
some passed and some did not. A case with no result in one of the runs is new, or removed,
unless that run's tags left it out.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.comparisons import BUCKETS, Bucket, ComparedRow, Comparison, rank_of

_START = """
INSERT INTO run_comparisons (run_id, baseline_run_id, counts, new_failures)
VALUES ($1, $2, '{}', 0)
ON CONFLICT DO NOTHING
RETURNING run_id
"""

_PER_CASE = """
SELECT test_case_id,
       bool_and(outcome = 'passed') AS passed,
       bool_or(outcome = 'passed') AS some_passed,
       min(seq) AS seq,
       min(revision_id::text) AS revision_id,
       coalesce(min(trial) FILTER (WHERE outcome <> 'passed'), min(trial)) AS shown_trial
FROM case_results WHERE run_id = {run} GROUP BY test_case_id
"""

# A run of one trial a case has one result a case: nothing to aggregate (a third of the time).
_PER_RESULT = """
SELECT test_case_id, outcome = 'passed' AS passed, outcome = 'passed' AS some_passed, seq,
       revision_id::text AS revision_id, trial AS shown_trial
FROM case_results WHERE run_id = {run}
"""

# Ranks are the places in BUCKETS: 1 new_failure, 2 still_failing, 3 flaky, 4 new_case,
# 5 fixed, 6 removed_case, 7 still_passing. The cases still passing (most of a healthy run) are
# counted but not stored: their pages are read from the two runs' results (_STILL_PASSING).
_COMPARE = """
WITH cur AS ({current}),
     base AS ({baseline}),
     compared AS (
    SELECT coalesce(c.test_case_id, b.test_case_id) AS test_case_id,
           CASE WHEN b.test_case_id IS NULL THEN 4
                WHEN c.test_case_id IS NULL THEN 6
                WHEN c.some_passed AND NOT c.passed THEN 3
                WHEN b.passed AND NOT c.passed THEN 1
                WHEN c.passed AND NOT b.passed THEN 5
                WHEN c.passed THEN 7
                ELSE 2 END AS rank,
           coalesce(c.seq, b.seq) AS seq,
           coalesce(c.revision_id <> b.revision_id, false) AS revision_changed,
           c.shown_trial AS current_trial, b.shown_trial AS baseline_trial,
           coalesce(b.passed AND NOT c.passed, false) AS newly_failing
    FROM cur c FULL JOIN base b USING (test_case_id){in_both_scopes}
), stored AS (
    INSERT INTO run_comparison_cases (run_id, baseline_run_id, test_case_id, rank, seq,
                                      revision_changed, current_trial, baseline_trial)
    SELECT $1, $2, test_case_id, rank, seq, revision_changed, current_trial, baseline_trial
    FROM compared WHERE rank <> 7
)
SELECT rank, count(*) AS cases, count(*) FILTER (WHERE newly_failing) AS newly_failing
FROM compared GROUP BY rank
"""

_TRIALS = "SELECT id, trials, tags FROM eval_runs WHERE id = ANY($1::uuid[])"

# A run limited to tags ran only the cases with one of them: a case only the other run ran is
# new (or removed) only when it would have run in this one too, judged by the tags of the
# revision the other run ran. Cases both runs ran are compared whatever their tags.
_IN_BOTH_SCOPES = """
    WHERE (c.test_case_id IS NOT NULL AND b.test_case_id IS NOT NULL)
       OR (b.test_case_id IS NULL AND {new_in_baseline_scope})
       OR (c.test_case_id IS NULL AND {removed_in_current_scope})"""
_TAGGED = (
    "EXISTS (SELECT 1 FROM test_case_revisions tr "
    "WHERE tr.id = {side}.revision_id::uuid AND tr.tags && ${parameter}::text[])"
)


async def _compare_statement(
    connection: Connection, run_id: UUID, baseline_run_id: UUID
) -> tuple[str, list[list[str]]]:
    """The comparison's statement, reading each run's cases as its trials need and keeping to
    the cases both runs' tags cover; with the tags it takes after $1 and $2."""
    rows = await connection.fetch(_TRIALS, [run_id, baseline_run_id])
    trials: dict[UUID, int] = {row["id"]: row["trials"] for row in rows}
    tags: dict[UUID, list[str] | None] = {row["id"]: row["tags"] for row in rows}

    def cases(run: UUID, parameter: str) -> str:
        return (_PER_CASE if trials.get(run, 1) > 1 else _PER_RESULT).format(run=parameter)

    arguments: list[list[str]] = []

    def covered(side: str, scope: list[str] | None) -> str:
        if scope is None:
            return "true"
        arguments.append(scope)
        return _TAGGED.format(side=side, parameter=len(arguments) + 2)

    scoped = ""
    if tags.get(run_id) is not None or tags.get(baseline_run_id) is not None:
        scoped = _IN_BOTH_SCOPES.format(
            new_in_baseline_scope=covered("c", tags.get(baseline_run_id)),
            removed_in_current_scope=covered("b", tags.get(run_id)),
        )
    statement = _COMPARE.format(
        current=cases(run_id, "$1"), baseline=cases(baseline_run_id, "$2"), in_both_scopes=scoped
    )
    return statement, arguments


_ENOUGH_MEMORY = "SET LOCAL work_mem = '64MB'"

_FINISH = """
UPDATE run_comparisons SET counts = $3, new_failures = $4
WHERE run_id = $1 AND baseline_run_id = $2
"""

_FORGET = "DELETE FROM run_comparisons WHERE run_id = $1 OR baseline_run_id = $1"

_GET = """
SELECT run_id, baseline_run_id, counts, new_failures FROM run_comparisons
WHERE run_id = $1 AND baseline_run_id = $2
"""

_PAGE = """
SELECT test_case_id, rank, seq, revision_changed, current_trial, baseline_trial
FROM run_comparison_cases
WHERE run_id = $1 AND baseline_run_id = $2 AND rank = ANY($3::smallint[]) AND (rank, seq) > ($4, $5)
ORDER BY rank, seq
LIMIT $6
"""


# Cases whose every trial passed in both runs, in the order the run graded their first trial.
_STILL_PASSING = """
SELECT c.test_case_id, 7 AS rank, c.seq, c.revision_id <> b.revision_id AS revision_changed,
       1 AS current_trial, 1 AS baseline_trial
FROM case_results c
JOIN case_results b ON b.run_id = $2 AND b.test_case_id = c.test_case_id AND b.trial = 1
WHERE c.run_id = $1 AND c.outcome = 'passed' AND c.trial = 1 AND c.seq > $3
  AND b.outcome = 'passed'
  AND NOT EXISTS (SELECT 1 FROM case_results x
                  WHERE x.run_id = $1 AND x.test_case_id = c.test_case_id AND x.outcome <> 'passed')
  AND NOT EXISTS (SELECT 1 FROM case_results y
                  WHERE y.run_id = $2 AND y.test_case_id = c.test_case_id AND y.outcome <> 'passed')
ORDER BY c.seq
LIMIT $4
"""
_STILL_PASSING_RANK = rank_of("still_passing")


async def compare(connection: Connection, run_id: UUID, baseline_run_id: UUID) -> Comparison:
    """The comparison of two ended runs: computed and kept the first time, read after that.
    Two requests at once compute it once (the second waits on the first's insert)."""
    if await connection.fetchval(_START, run_id, baseline_run_id) is not None:
        # Two 100,000-case aggregates and their join fit in memory with this much, where the
        # default spills them to disk (for this transaction only).
        await connection.execute(_ENOUGH_MEMORY)
        statement, tags = await _compare_statement(connection, run_id, baseline_run_id)
        rows = await connection.fetch(statement, run_id, baseline_run_id, *tags)
        counts = {BUCKETS[row["rank"] - 1]: row["cases"] for row in rows}
        new_failures = sum(row["newly_failing"] for row in rows)
        await connection.execute(_FINISH, run_id, baseline_run_id, counts, new_failures)
    found = await get_comparison(connection, run_id, baseline_run_id)
    assert found is not None
    return found


async def forget_comparisons(connection: Connection, run_id: UUID) -> None:
    """Drop every kept comparison the run is part of (its results changed)."""
    await connection.execute(_FORGET, run_id)


async def get_comparison(
    executor: Executor, run_id: UUID, baseline_run_id: UUID
) -> Comparison | None:
    """A kept comparison, or None."""
    row = await executor.fetchrow(_GET, run_id, baseline_run_id)
    return None if row is None else _comparison(row)


async def compared_page(
    executor: Executor,
    run_id: UUID,
    baseline_run_id: UUID,
    buckets: tuple[Bucket, ...],
    after: tuple[int, int],
    limit: int,
) -> list[ComparedRow]:
    """A page of the compared cases in these buckets, after (rank, seq), in listing order."""
    ranks = [rank_of(bucket) for bucket in buckets]
    rows = await executor.fetch(_PAGE, run_id, baseline_run_id, ranks, *after, limit)
    page = [_row(row) for row in rows]
    if _STILL_PASSING_RANK in ranks and len(page) < limit:
        after_seq = after[1] if after[0] == _STILL_PASSING_RANK else 0
        rows = await executor.fetch(
            _STILL_PASSING, run_id, baseline_run_id, after_seq, limit - len(page)
        )
        page += [_row(row) for row in rows]
    return page


def _comparison(row: asyncpg.Record) -> Comparison:
    counts = {bucket: int(row["counts"].get(bucket, 0)) for bucket in BUCKETS}
    return Comparison(
        run_id=row["run_id"], baseline_run_id=row["baseline_run_id"], counts=counts,
        new_failures=row["new_failures"],
    )  # fmt: skip


def _row(row: asyncpg.Record) -> ComparedRow:
    return ComparedRow(
        test_case_id=row["test_case_id"], bucket=BUCKETS[row["rank"] - 1], seq=row["seq"],
        revision_changed=row["revision_changed"], current_trial=row["current_trial"],
        baseline_trial=row["baseline_trial"],
    )  # fmt: skip
