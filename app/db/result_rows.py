"""A run's results as its page lists them: by outcome, filtered, a bounded scan at a time.

Results of one outcome are read in arrival order through the (run_id, outcome, seq) index. A
filter that matches few rows would otherwise read a whole outcome of a 100,000-result run for
one page, so each query scans at most SCAN_WINDOW rows: when they hold too few matches, the page
says how far it looked and its cursor goes on from there.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from app.db.pool import Executor
from app.domain.web import ResultFilter, ResultRow

SCAN_WINDOW = 10_000
INPUT_SHOWN = 300

# Two statements, not one with a flag: only a query that says `partially_graded` outright lets
# the planner use the index of those rows.
_ONLY_PARTIAL = "AND partially_graded"

_ROWS = f"""
SELECT r.seq, r.test_case_id, r.trial, r.outcome, r.partially_graded, r.agent_error,
       jsonb_path_query_array(r.check_results, '$[*] ? (@.status == "failed").type')
         AS failed_check_types,
       left(v.input #>> '{{}}', {INPUT_SHOWN}) AS input, v.description
FROM (
    SELECT seq, test_case_id, trial, outcome, partially_graded, agent_error, check_results,
           revision_id
    FROM case_results
    WHERE run_id = $1 AND outcome = $2 AND seq > $3 /* partial */
    ORDER BY seq
    LIMIT $4
) r
LEFT JOIN test_case_revisions v ON v.id = r.revision_id
WHERE ($5::jsonb IS NULL OR r.check_results @> $5::jsonb)
  AND ($6::text IS NULL
       OR ((v.input #>> '{{}}') || ' ' || coalesce(v.description, '')) ILIKE $6)
ORDER BY r.seq
LIMIT $7
"""

# The seq of the window's last row when the window is full (the scan stopped there), else none.
_WINDOW_END = """
SELECT seq FROM case_results
WHERE run_id = $1 AND outcome = $2 AND seq > $3 /* partial */
ORDER BY seq
OFFSET $4 - 1 LIMIT 1
"""


async def result_rows(
    executor: Executor,
    run_id: UUID,
    outcome: str,
    after_seq: int,
    chosen: ResultFilter,
    limit: int,
) -> tuple[list[ResultRow], int | None]:
    """Up to `limit` matching results of one outcome after `after_seq`, and where the scan
    stopped when it gave up early (None: it reached the end of the outcome, or filled up)."""
    partial = _ONLY_PARTIAL if chosen.partially_graded else ""
    rows = await executor.fetch(
        _ROWS.replace("/* partial */", partial), run_id, outcome, after_seq,
        SCAN_WINDOW if chosen.narrows else limit, _failed_check(chosen), _pattern(chosen.text),
        limit,
    )  # fmt: skip
    found = [_row(row) for row in rows]
    if len(found) == limit or not chosen.narrows:
        return found, None
    window_end: int | None = await executor.fetchval(
        _WINDOW_END.replace("/* partial */", partial), run_id, outcome, after_seq, SCAN_WINDOW
    )
    return found, window_end


def _failed_check(chosen: ResultFilter) -> list[dict[str, str]] | None:
    """A containment test: the results hold a failed check of this type and/or severity."""
    if chosen.check_type is None and chosen.severity is None:
        return None
    check: dict[str, str] = {"status": "failed"}
    if chosen.check_type:
        check["type"] = chosen.check_type
    if chosen.severity:
        check["severity"] = chosen.severity
    return [check]


def _pattern(text: str | None) -> str | None:
    if not text:
        return None
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _row(row: asyncpg.Record) -> ResultRow:
    return ResultRow(
        seq=row["seq"], test_case_id=row["test_case_id"], trial=row["trial"],
        outcome=row["outcome"], partially_graded=row["partially_graded"],
        agent_error=row["agent_error"],
        failed_check_types=row["failed_check_types"],
        input=row["input"], description=row["description"],
    )  # fmt: skip
