"""A run's results as its page lists them: by outcome, filtered, a bounded scan at a time.

Results of one outcome are read in arrival order through the (run_id, outcome, seq) index. A
filter that matches few rows would otherwise read a whole outcome of a 100,000-result run for
one page, so each query scans at most SCAN_WINDOW rows: when they hold too few matches, the page
says how far it looked and its cursor goes on from there.

A search by input starts from the other end when it can: the revisions of the dataset whose text
matches, found through the trigram index. When there are few (at most SEARCH_HITS), only their
results are read, by primary key; when there are many, matches are dense and the bounded scan
fills a page quickly.

A conversation case has no input: it is shown by its first user message (a scripted turn's, or
its simulated user's opening), and searched in its scripted user messages, as the studio's
search and its index (sql/0019_conversations.sql) read it.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg
import msgspec

from agentlasso.db.pool import Executor
from agentlasso.domain.web import ResultFilter, ResultRow

SCAN_WINDOW = 10_000
SEARCH_HITS = 2_000
INPUT_SHOWN = 300

# Two statements, not one with a flag: only a query that says `partially_graded` outright lets
# the planner use the index of those rows.
_ONLY_PARTIAL = "AND partially_graded"

# What a result's row shows of its case: the input, or a conversation's first user message.
_FIRST_USER_MESSAGE = (
    "coalesce(v.input, v.conversation #> '{turns,0,user}',"
    " v.conversation #> '{simulated_user,opening}')"
)
# The text a search looks in: exactly the expression of test_case_revisions_search_idx, so that
# _SEARCH can use the index.
_SEARCHED = (
    "((coalesce({r}input, jsonb_path_query_array({r}conversation, '$.turns[*].user')) #>> '{{}}')"
    " || ' ' || coalesce({r}description, ''))"
)

_ROWS = f"""
SELECT r.seq, r.test_case_id, r.trial, r.outcome, r.partially_graded, r.agent_error,
       jsonb_path_query_array(r.check_results, '$[*] ? (@.status == "failed").type')
         AS failed_check_types,
       left({_FIRST_USER_MESSAGE} #>> '{{}}', {INPUT_SHOWN}) AS input, v.description
FROM (
    SELECT seq, test_case_id, trial, outcome, partially_graded, agent_error, check_results,
           revision_id
    FROM /* results */ AND outcome = $2 AND seq > $3 /* partial */
    ORDER BY seq
    LIMIT $4
) r
LEFT JOIN test_case_revisions v ON v.id = r.revision_id
WHERE ($5::jsonb IS NULL OR r.check_results @> $5::jsonb)
  AND ($6::text IS NULL
       OR {_SEARCHED.format(r="v.")} ILIKE $6)
ORDER BY r.seq
LIMIT $7
"""

# The seq of the window's last row when the window is full (the scan stopped there), else none.
_WINDOW_END = """
SELECT seq FROM /* results */ AND outcome = $2 AND seq > $3 /* partial */
ORDER BY seq
OFFSET $4 - 1 LIMIT 1
"""


# The revisions of the dataset whose input or description holds the text (trigram index).
_SEARCH = f"""
SELECT id, test_case_id FROM test_case_revisions
WHERE dataset_id = $1 AND {_SEARCHED.format(r="")} ILIKE $2
LIMIT $3
"""
# Trigrams need three characters: a shorter text cannot use the index.
_TRIGRAM = 3


class SearchHits(msgspec.Struct, frozen=True):
    """Revisions that match a search, and their cases."""

    revision_ids: list[UUID]
    test_case_ids: list[UUID]


async def search_hits(executor: Executor, dataset_id: UUID, text: str | None) -> SearchHits | None:
    """The matching revisions when they are few enough to read their results one by one; None
    when there is no search, or when the text is too short or too common for that."""
    if not text or len(text) < _TRIGRAM:
        return None
    rows = await executor.fetch(_SEARCH, dataset_id, _pattern(text), SEARCH_HITS + 1)
    if len(rows) > SEARCH_HITS:
        return None
    return SearchHits([row["id"] for row in rows], list({row["test_case_id"] for row in rows}))


async def result_rows(
    executor: Executor,
    run_id: UUID,
    outcome: str,
    after_seq: int,
    chosen: ResultFilter,
    limit: int,
    hits: SearchHits | None = None,
) -> tuple[list[ResultRow], int | None]:
    """Up to `limit` matching results of one outcome after `after_seq`, and where the scan
    stopped when it gave up early (None: it reached the end of the outcome, or filled up).
    With `hits` (see search_hits), only the results of those revisions are read."""
    partial = _ONLY_PARTIAL if chosen.partially_graded else ""
    among = () if hits is None else (hits.test_case_ids, hits.revision_ids)
    rows = await executor.fetch(
        _narrowed(_ROWS, partial, among, first_parameter=8), run_id, outcome, after_seq,
        SCAN_WINDOW if chosen.narrows else limit, _failed_check(chosen), _pattern(chosen.text),
        limit, *among,
    )  # fmt: skip
    found = [_row(row) for row in rows]
    if len(found) == limit or not chosen.narrows:
        return found, None
    window_end: int | None = await executor.fetchval(
        _narrowed(_WINDOW_END, partial, among, first_parameter=5), run_id, outcome, after_seq,
        SCAN_WINDOW, *among,
    )  # fmt: skip
    return found, window_end


def _narrowed(sql: str, partial: str, among: tuple[object, ...], first_parameter: int) -> str:
    """The statement reading all of the run's results, or only those of some cases at some
    revisions (looked up by primary key, case by case); partially graded ones only or not."""
    results = "case_results WHERE run_id = $1"
    if among:
        cases, revisions = f"${first_parameter}::uuid[]", f"${first_parameter + 1}::uuid[]"
        # OFFSET 0 keeps the lookups a step of their own: otherwise the planner walks the whole
        # outcome in seq order (for the ORDER BY ... LIMIT) and tests each row against the hits.
        results = (
            f"(SELECT c.* FROM unnest({cases}) AS hit(case_id) JOIN case_results c"
            f" ON c.run_id = $1 AND c.test_case_id = hit.case_id"
            f" WHERE c.revision_id = ANY({revisions}) OFFSET 0) AS hits WHERE true"
        )
    return sql.replace("/* results */", results).replace("/* partial */", partial)


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
