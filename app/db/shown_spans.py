"""A trace's spans as its page and its API answer show them: each value cut, the whole bounded.

Spans are stored whole, and one attribute may be megabytes: read back as they are, one trace
was a 55 MB answer and an 89 MB page. PostgreSQL cuts each long value before it is sent (the
cut said at the cut), and the spans stop once they pass a byte budget.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor
from agentlasso.traces.spans import Span, SpanEvent

# The spans of one answer stop before they pass this many bytes (span_count says how many).
SPANS_BYTES = 4 * 1024 * 1024


def _cut(column: str) -> str:
    """An attributes object with each text over $4 characters, and each structure whose JSON
    is, cut there and ended with the cut mark ($5)."""
    return f"""(SELECT coalesce(jsonb_object_agg(key, CASE
        WHEN jsonb_typeof(value) = 'string' AND length(value #>> '{{}}') > $4
            THEN to_jsonb(left(value #>> '{{}}', $4) || $5)
        WHEN jsonb_typeof(value) IN ('array', 'object') AND length(value::text) > $4
            THEN to_jsonb(left(value::text, $4) || $5)
        ELSE value END), '{{}}'::jsonb) FROM jsonb_each({column}))"""


# Events too large to show whole are one event saying how many there were.
_EVENTS = """CASE WHEN length(events::text) <= $4 THEN events ELSE jsonb_build_array(
    jsonb_build_object('name', jsonb_array_length(events) || ' events, cut: '
        || length(events::text) || ' characters', 'time_ns', 0, 'attributes', '{}'::jsonb))
    END"""
_TRACE_SPANS = f"""
SELECT * FROM (
    SELECT cut.*, row_number() OVER shown AS position,
           sum(length(cut.attributes::text) + length(cut.events::text)
               + length(cut.resource::text)) OVER shown AS running_chars
    FROM (
        SELECT trace_id, span_id, parent_span_id, left(name, $4) AS name, kind, start_ns,
               end_ns, status_code, left(status_message, $4) AS status_message,
               {_cut("attributes")} AS attributes, {_EVENTS} AS events,
               {_cut("resource")} AS resource, left(scope, $4) AS scope
        FROM trace_spans WHERE project_id = $1 AND trace_id = $2
        ORDER BY start_ns, span_id
        LIMIT $3
    ) cut
    WINDOW shown AS (ORDER BY start_ns, span_id ROWS UNBOUNDED PRECEDING)
) sized
WHERE running_chars <= $6 OR position = 1
ORDER BY start_ns, span_id
"""


async def trace_spans(
    executor: Executor, project_id: UUID, trace_id: str, limit: int, chars: int, mark: str
) -> list[Span]:
    """A trace's first spans in the order they started: at most `limit`, each text value cut
    at `chars` characters and ended with `mark`, stopping before SPANS_BYTES."""
    rows = await executor.fetch(_TRACE_SPANS, project_id, trace_id, limit, chars, mark, SPANS_BYTES)
    return [_span(row) for row in rows]


def _span(row: Any) -> Span:
    return Span(
        trace_id=row["trace_id"],
        span_id=row["span_id"],
        parent_span_id=row["parent_span_id"],
        name=row["name"],
        kind=row["kind"],
        start_ns=row["start_ns"],
        end_ns=row["end_ns"],
        status_code=row["status_code"],
        status_message=row["status_message"],
        attributes=row["attributes"],
        events=tuple(msgspec.convert(event, SpanEvent) for event in row["events"]),
        resource=row["resource"],
        scope=row["scope"],
    )
