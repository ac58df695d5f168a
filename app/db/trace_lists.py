"""Listing a project's traces: newest first, searched and filtered, a page bounded in bytes."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor
from agentlasso.db.traces import TraceRow, trace_row

# A page stops before its summaries pass this many bytes (then next_cursor): even cut, a
# summary of many tool calls is large, and a page may ask for a thousand of them.
PAGE_BYTES = 4 * 1024 * 1024
# How many of the newest traces a filtered page looks through before it turns to the indexes.
RECENT_WINDOW = 2_000


class TraceFilters(msgspec.Struct, frozen=True, kw_only=True):
    """What the traces list is narrowed to."""

    text: str | None = None
    tool: str | None = None
    errors_only: bool = False
    started_after: datetime | None = None
    started_before: datetime | None = None


# The conversation (messages) is left out: a list never shows it, and it is most of a row.
_COLUMNS = """t.trace_id, t.name, t.input, t.output, '[]'::jsonb AS messages, t.tool_calls,
       t.model, t.usage, t.error, t.started_at, t.duration_ms, t.span_count, t.received_at,
       t.cuts, t.conversation_id,
       octet_length(coalesce(t.input::text, '')) + octet_length(coalesce(t.output, ''))
       + octet_length(t.tool_calls::text) + octet_length(coalesce(t.error, '')) AS size_bytes"""
# Where the page is in time: the time range and the cursor, which the newest-first index reads.
_IN_TIME = """project_id = $1
  AND ($5::timestamptz IS NULL OR started_at >= $5)
  AND ($6::timestamptz IS NULL OR started_at < $6)
  AND ($7::timestamptz IS NULL OR (started_at, trace_id) < ($7, $8::text))"""
_MATCHING = """($2::text IS NULL OR search_text ILIKE '%' || $2 || '%')
  AND ($3::text IS NULL OR tool_names @> ARRAY[$3::text])
  AND (NOT $4::boolean OR error IS NOT NULL)"""
_LIST = f"""
SELECT {_COLUMNS} FROM traces t
WHERE {_IN_TIME} AND {_MATCHING}
ORDER BY t.started_at DESC, t.trace_id DESC
LIMIT $9
"""
# A filter that matches many traces finds its page among the newest few thousand, reading
# them newest first and stopping at a full page; read through the search and tool indexes
# instead, it would read and sort every match first (half a second when 100,000 match).
_LIST_RECENT = f"""
SELECT {_COLUMNS} FROM (
    SELECT trace_id FROM (
        SELECT trace_id, started_at, search_text, tool_names, error FROM traces
        WHERE {_IN_TIME}
        ORDER BY started_at DESC, trace_id DESC
        LIMIT $11
    ) recent
    WHERE {_MATCHING}
    ORDER BY started_at DESC, trace_id DESC
    LIMIT $9
) page
JOIN traces t ON t.project_id = $1 AND t.trace_id = page.trace_id
ORDER BY t.started_at DESC, t.trace_id DESC
"""
_WINDOW_COUNT = """
SELECT count(*) FROM (
    SELECT 1 FROM traces
    WHERE project_id = $1
      AND ($2::timestamptz IS NULL OR started_at >= $2)
      AND ($3::timestamptz IS NULL OR started_at < $3)
      AND ($4::timestamptz IS NULL OR (started_at, trace_id) < ($4, $5::text))
    LIMIT $6
) window_rows
"""


def _within_bytes(query: str) -> str:
    """The page's rows up to the first that would pass $10 bytes (the first always comes),
    and how many the page had before: rows past the budget are never sent."""
    return f"""
SELECT * FROM (
    SELECT page.*, count(*) OVER () AS page_rows,
           sum(page.size_bytes) OVER (ORDER BY page.started_at DESC, page.trace_id DESC
                                      ROWS UNBOUNDED PRECEDING) AS running_bytes
    FROM ({query}) page
) sized
WHERE running_bytes - size_bytes < $10 OR running_bytes = size_bytes
ORDER BY started_at DESC, trace_id DESC
"""


_LIST_SIZED = _within_bytes(_LIST)
_LIST_RECENT_SIZED = _within_bytes(_LIST_RECENT)


async def list_traces(
    executor: Executor,
    project_id: UUID,
    filters: TraceFilters,
    after: tuple[datetime, str] | None,
    limit: int,
) -> tuple[list[TraceRow], bool]:
    """A page of a project's traces, newest first, and whether more follow: past `limit`
    traces, or past PAGE_BYTES of them."""
    arguments = (
        project_id,
        _like_pattern(filters.text),
        filters.tool,
        filters.errors_only,
        filters.started_after,
        filters.started_before,
        after[0] if after else None,
        after[1] if after else None,
        limit + 1,
        PAGE_BYTES,
    )
    if filters.text or filters.tool or filters.errors_only:
        window = RECENT_WINDOW + limit + 1
        rows = await executor.fetch(_LIST_RECENT_SIZED, *arguments, window)
        # A full page among the newest, or fewer because the window held every trace in time.
        if _page_rows(rows) > limit or await _all_in_window(executor, arguments, window):
            return _page(rows, limit)
    return _page(await executor.fetch(_LIST_SIZED, *arguments), limit)


def _page_rows(rows: list[Any]) -> int:
    return int(rows[0]["page_rows"]) if rows else 0


def _page(rows: list[Any], limit: int) -> tuple[list[TraceRow], bool]:
    """The page's traces (at most `limit`), and whether more follow."""
    more = _page_rows(rows) > limit or len(rows) < _page_rows(rows)
    return [trace_row(row) for row in rows[:limit]], more


async def _all_in_window(executor: Executor, arguments: tuple[Any, ...], window: int) -> bool:
    """Whether the newest `window` traces in time are all there are (so none match beyond)."""
    project_id, *_, started_after, started_before, after_time, after_id, _, _ = arguments
    count: int = await executor.fetchval(
        _WINDOW_COUNT, project_id, started_after, started_before, after_time, after_id, window + 1
    )
    return count <= window


def _like_pattern(search: str | None) -> str | None:
    """The text as a literal inside an ILIKE pattern."""
    if not search:
        return None
    return search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
