"""Traces: the inbox of accepted OTLP requests, every span as it came, one summary per trace."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db.pool import Connection, Executor, jsonb_text
from agentlasso.traces.spans import Span
from agentlasso.traces.summary import TraceMessage, TraceSummary, TraceToolCall, TraceUsage

# Search reads this much of a trace's input and reply: enough for any phrase a person types.
SEARCH_TEXT_CHARS = 4_000


class ClaimedBatch(msgspec.Struct, frozen=True):
    """An accepted request taken off the inbox to be read."""

    id: int
    project_id: UUID
    encoding: str
    gzipped: bool
    body: bytes
    failed_attempts: int


class TraceRow(msgspec.Struct, frozen=True, kw_only=True):
    """A trace as stored: its summary, and when it arrived."""

    trace_id: str
    name: str
    input: Any
    output: str | None
    messages: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]]
    model: str | None
    usage: dict[str, Any] | None
    error: str | None
    started_at: datetime
    duration_ms: int
    span_count: int
    received_at: datetime
    # What was cut to keep the summary small, in words.
    cuts: list[str] = []
    # The conversation this trace is a turn of, when its spans named one.
    conversation_id: str | None = None


_ROW_FIELDS = tuple(field.name for field in msgspec.structs.fields(TraceRow))


_ADD_BATCH = """
INSERT INTO trace_batches (project_id, encoding, gzipped, body, span_count, plain_bytes)
VALUES ($1, $2, $3, $4, $5, $6)
"""


async def add_batch(
    executor: Executor,
    project_id: UUID,
    encoding: str,
    gzipped: bool,
    body: bytes,
    counts: tuple[int, int],
) -> None:
    """Keep an accepted request until a worker reads it; counts: (its spans, its bytes once
    decompressed)."""
    await executor.execute(_ADD_BATCH, project_id, encoding, gzipped, body, *counts)


# Each project's oldest first, projects in turn: a project sending a flood of spans delays
# its own traces, not another's. A batch another worker holds is skipped, not waited for.
# Taken off the inbox in the transaction that stores its spans: a worker that dies puts it back.
_CLAIM = """
WITH projects AS (
    SELECT DISTINCT project_id FROM trace_batches
), heads AS (
    SELECT b.id, b.turn FROM projects p CROSS JOIN LATERAL (
        SELECT id, row_number() OVER (ORDER BY id) AS turn FROM trace_batches
        WHERE project_id = p.project_id ORDER BY id LIMIT $1
    ) b
), chosen AS (
    SELECT t.id, t.plain_bytes, h.turn FROM trace_batches t JOIN heads h ON h.id = t.id
    ORDER BY h.turn, t.id LIMIT $1
    FOR UPDATE OF t SKIP LOCKED
), within_budget AS (
    -- The first always, then as many as fit in $2 bytes once decompressed: those left stay
    -- locked until the transaction ends, and wait for the next pass.
    SELECT id FROM (
        SELECT id, row_number() OVER taken AS position, sum(plain_bytes) OVER taken AS running
        FROM chosen WINDOW taken AS (ORDER BY turn, id ROWS UNBOUNDED PRECEDING)
    ) c
    WHERE position = 1 OR running <= $2
)
DELETE FROM trace_batches WHERE id IN (SELECT id FROM within_budget)
RETURNING id, project_id, encoding, gzipped, body, failed_attempts
"""


async def claim_batches(
    connection: Connection, limit: int, budget_bytes: int
) -> list[ClaimedBatch]:
    """Take up to `limit` batches off the inbox, for this transaction, as many as fit in
    `budget_bytes` once decompressed (one at least)."""
    rows = await connection.fetch(_CLAIM, limit, budget_bytes)
    return [ClaimedBatch(*row) for row in rows]


_CLAIM_ONE = """
DELETE FROM trace_batches
WHERE id = (SELECT id FROM trace_batches WHERE id = $1 FOR UPDATE SKIP LOCKED)
RETURNING id, project_id, encoding, gzipped, body, failed_attempts
"""


async def claim_batch(connection: Connection, batch_id: int) -> list[ClaimedBatch]:
    """Take this one batch off the inbox, if it is there and not held; for this transaction."""
    rows = await connection.fetch(_CLAIM_ONE, batch_id)
    return [ClaimedBatch(*row) for row in rows]


_WAITING = "SELECT count(*) FROM trace_batches"


async def waiting_batches(executor: Executor) -> int:
    """Accepted trace requests no worker has read yet, of every project."""
    count: int = await executor.fetchval(_WAITING)
    return count


_NOTE_FAILED = "UPDATE trace_batches SET failed_attempts = failed_attempts + 1 WHERE id = ANY($1)"


async def note_failed(executor: Executor, batch_ids: Sequence[int]) -> None:
    """Count a failed attempt to store these batches."""
    await executor.execute(_NOTE_FAILED, list(batch_ids))


# Creates the traces not seen before and locks every one of them until the transaction ends,
# so two workers storing spans of one trace take turns, and each sums up all of its spans.
# Rows are locked in key order: two such statements never wait on each other in a cycle.
_LOCK_TRACES = """
INSERT INTO traces AS t (project_id, trace_id)
SELECT project_id, trace_id FROM unnest($1::uuid[], $2::text[]) AS k (project_id, trace_id)
ORDER BY project_id, trace_id
ON CONFLICT (project_id, trace_id) DO UPDATE SET updated_at = now()
RETURNING t.project_id, t.trace_id, t.span_count
"""


async def lock_traces(
    connection: Connection, keys: Sequence[tuple[UUID, str]]
) -> dict[tuple[UUID, str], int]:
    """Create or lock these traces; the spans each held before, by key."""
    rows = await connection.fetch(_LOCK_TRACES, [key[0] for key in keys], [key[1] for key in keys])
    return {(row["project_id"], row["trace_id"]): row["span_count"] for row in rows}


_INSERT_SPANS = """
INSERT INTO trace_spans (project_id, trace_id, span_id, parent_span_id, name, kind, start_ns,
    end_ns, status_code, status_message, attributes, events, resource, scope)
SELECT p, t, s, ps, n, k, sn, en, sc, sm, a::jsonb, e::jsonb, r::jsonb, sp
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[],
    $7::bigint[], $8::bigint[], $9::smallint[], $10::text[], $11::text[], $12::text[],
    $13::text[], $14::text[]) AS u (p, t, s, ps, n, k, sn, en, sc, sm, a, e, r, sp)
ON CONFLICT DO NOTHING
RETURNING project_id, trace_id, span_id
"""


def span_columns(spans: Sequence[tuple[UUID, Span]]) -> list[list[Any]]:
    """The spans as insert_spans' columns: their values written as JSON, which a caller may do
    off the event loop (one attribute may be megabytes)."""
    columns: list[list[Any]] = [[] for _ in range(14)]
    for project_id, span in spans:
        values = (
            project_id, span.trace_id, span.span_id, span.parent_span_id, text(span.name),
            span.kind, _bigint(span.start_ns), _bigint(span.end_ns), span.status_code,
            text(span.status_message), jsonb_text(span.attributes),
            jsonb_text(msgspec.to_builtins(span.events)), jsonb_text(span.resource),
            text(span.scope),
        )  # fmt: skip
        for column, value in zip(columns, values, strict=True):
            column.append(value)
    return columns


async def insert_spans(
    connection: Connection, columns: list[list[Any]]
) -> set[tuple[UUID, str, str]]:
    """Store spans (span_columns' columns); a span id already stored for its trace is kept as
    it was. The spans stored now, as (project, trace, span id)."""
    rows = await connection.fetch(_INSERT_SPANS, *columns)
    return {(row["project_id"], row["trace_id"], row["span_id"]) for row in rows}


_SUMMARIES_OF = """
SELECT t.project_id, t.trace_id, t.name, t.input, t.output, t.messages, t.tool_calls, t.model,
       t.usage, t.error, t.started_at, t.duration_ms, t.span_count, t.cuts, t.conversation_id
FROM unnest($1::uuid[], $2::text[]) AS k (project_id, trace_id)
JOIN traces t ON t.project_id = k.project_id AND t.trace_id = k.trace_id
"""


async def summaries_of(
    executor: Executor, keys: Sequence[tuple[UUID, str]]
) -> dict[tuple[UUID, str], TraceSummary]:
    """The stored summaries of these traces, by key (their spans are not read)."""
    rows = await executor.fetch(_SUMMARIES_OF, [key[0] for key in keys], [key[1] for key in keys])
    return {(row["project_id"], row["trace_id"]): _stored_summary(row) for row in rows}


def _stored_summary(row: Any) -> TraceSummary:
    started = row["started_at"]
    return TraceSummary(
        name=row["name"],
        input=row["input"],
        output=row["output"],
        messages=msgspec.convert(row["messages"], tuple[TraceMessage, ...]),
        tool_calls=msgspec.convert(row["tool_calls"], tuple[TraceToolCall, ...]),
        model=row["model"],
        usage=None if row["usage"] is None else msgspec.convert(row["usage"], TraceUsage),
        error=row["error"],
        started_ns=round(started.timestamp() * 1_000_000) * 1_000,
        duration_ms=row["duration_ms"],
        span_count=row["span_count"],
        cuts=tuple(row["cuts"]),
        conversation_id=row["conversation_id"],
    )


_STORE_SUMMARY = """
UPDATE traces SET
    name = $3, input = $4, output = $5, search_text = $6, messages = $7, tool_calls = $8,
    tool_names = $9, model = $10, usage = $11, error = $12,
    started_at = COALESCE(to_timestamp(NULLIF($13::bigint, 0) / 1e9), received_at),
    duration_ms = $14, span_count = $15, cuts = $16, conversation_id = $17, updated_at = now()
WHERE project_id = $1 AND trace_id = $2
"""


async def store_summaries(
    connection: Connection, summaries: Sequence[tuple[UUID, str, TraceSummary]]
) -> None:
    """Write each trace's summary over the one before."""
    await connection.executemany(_STORE_SUMMARY, [_summary_row(*each) for each in summaries])


def _summary_row(project_id: UUID, trace_id: str, summary: TraceSummary) -> tuple[Any, ...]:
    tool_names = sorted({text(call.name) for call in summary.tool_calls})
    return (
        project_id, trace_id, text(summary.name), summary.input, _text_or_none(summary.output),
        search_text(summary), msgspec.to_builtins(summary.messages),
        msgspec.to_builtins(summary.tool_calls), tool_names, _text_or_none(summary.model),
        None if summary.usage is None else msgspec.to_builtins(summary.usage),
        _text_or_none(summary.error), _bigint(summary.started_ns),
        max(0, summary.duration_ms), summary.span_count, [text(cut) for cut in summary.cuts],
        _text_or_none(summary.conversation_id),
    )  # fmt: skip


def search_text(summary: TraceSummary) -> str:
    """What a search of a trace reads: its input and its reply."""
    shown_input = summary.input if isinstance(summary.input, str) else _json(summary.input)
    return text(f"{shown_input}\n{summary.output or ''}")[:SEARCH_TEXT_CHARS]


def _json(value: Any) -> str:
    return "" if value is None else msgspec.json.encode(value).decode()


def text(value: str) -> str:
    """Text PostgreSQL can store: it refuses the character U+0000."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def _text_or_none(value: str | None) -> str | None:
    return None if value is None else text(value)


def _bigint(value: int) -> int:
    """A time as a bigint: an absurd one (past 2262) is taken as not recorded."""
    return value if 0 <= value < 2**63 else 0


def trace_row(row: Any) -> TraceRow:
    """A trace's summary from a row holding (at least) its columns."""
    return TraceRow(**{key: row[key] for key in _ROW_FIELDS})


_GET = """
SELECT trace_id, name, input, output, messages, tool_calls, model, usage, error, started_at,
       duration_ms, span_count, received_at, cuts, conversation_id
FROM traces WHERE project_id = $1 AND trace_id = ANY($2::text[])
"""


async def get_traces(
    executor: Executor, project_id: UUID, trace_ids: Sequence[str]
) -> dict[str, TraceRow]:
    """Those of these traces the project has, by id."""
    rows = await executor.fetch(_GET, project_id, list(trace_ids))
    return {row["trace_id"]: trace_row(row) for row in rows}


_TOOLS = """
SELECT DISTINCT unnest(tool_names) AS tool FROM (
    SELECT tool_names FROM traces WHERE project_id = $1
    ORDER BY started_at DESC LIMIT 2000
) recent ORDER BY tool LIMIT 200
"""


async def recent_tool_names(executor: Executor, project_id: UUID) -> list[str]:
    """The tools the project's recent traces called, for the filter's choices."""
    return [row["tool"] for row in await executor.fetch(_TOOLS, project_id)]


# A batch of the oldest expired traces of one project; their spans go with them (cascade).
_DELETE_EXPIRED = """
DELETE FROM traces WHERE (project_id, trace_id) IN (
    SELECT t.project_id, t.trace_id FROM projects p
    JOIN LATERAL (
        SELECT project_id, trace_id FROM traces
        WHERE project_id = p.id
          AND received_at < now() - make_interval(days => p.trace_retention_days)
        ORDER BY received_at LIMIT $1
    ) t ON true
    LIMIT $1
)
"""


async def delete_expired(executor: Executor, batch: int) -> int:
    """Delete at most `batch` traces past their project's retention; how many went."""
    status: str = await executor.execute(_DELETE_EXPIRED, batch)
    return int(status.rsplit(" ", 1)[-1])


_CASES_FROM = """
SELECT c.id, c.dataset_id, d.name AS dataset_name
FROM test_cases c JOIN datasets d ON d.id = c.dataset_id
WHERE c.source_trace_id = $2 AND d.project_id = $1 AND d.deleted_at IS NULL
ORDER BY c.created_at
LIMIT 100
"""


async def cases_from_trace(
    executor: Executor, project_id: UUID, trace_id: str
) -> list[tuple[UUID, UUID, str]]:
    """The project's test cases made from this trace: (case, dataset, dataset name)."""
    rows = await executor.fetch(_CASES_FROM, project_id, trace_id)
    return [(row["id"], row["dataset_id"], row["dataset_name"]) for row in rows]


_RETENTION = "SELECT trace_retention_days FROM projects WHERE id = $1"
# FOR UPDATE reads the newest value, waiting for a change going on: the one this replaces.
_LOCK_RETENTION = "SELECT trace_retention_days FROM projects WHERE id = $1 FOR UPDATE"
_SET_RETENTION = "UPDATE projects SET trace_retention_days = $2 WHERE id = $1"


async def retention_days(executor: Executor, project_id: UUID) -> int:
    """How many days the project keeps its traces."""
    days: int = await executor.fetchval(_RETENTION, project_id)
    return days


async def set_retention_days(connection: Connection, project_id: UUID, days: int) -> int:
    """Keep the project's traces this many days after they arrive, in the connection's open
    transaction; the days they were kept."""
    before: int = await connection.fetchval(_LOCK_RETENTION, project_id)
    await connection.execute(_SET_RETENTION, project_id, days)
    return before
