"""A worker's duty of reading accepted OTLP requests into spans and trace summaries.

Requests wait in `trace_batches` as they came. A worker takes a few off (skipping those another
worker holds), decodes them, stores their spans once each, and brings the summary of every
trace they touched up to date with the spans it had not stored before, never reading the
earlier ones back. All in one transaction: a worker that dies leaves the batches where they
were, and a batch read twice stores nothing twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any
from uuid import UUID

import asyncpg

from agentlasso.db import traces as db
from agentlasso.db.pool import Connection
from agentlasso.traces.limits import TraceLimits
from agentlasso.traces.otlp import Encoding, OtlpError, decode, decompressed
from agentlasso.traces.spans import Span
from agentlasso.traces.summary import TraceSummary, summarise
from agentlasso.traces.summary_cuts import cut_span, cut_summary
from agentlasso.traces.summary_merge import merged

log = logging.getLogger("agentlasso.traces")

# Batches read per transaction: a few requests' worth of spans, a short transaction; and no
# more of them than fit in this many bytes once decompressed (one always), so a pass never
# holds eight of the largest requests at once.
BATCHES_PER_PASS = 8
PASS_BYTES = 48 * 1024 * 1024
# After each pass, a rest this many times as long as the pass took.
REST_PER_PASS = 1.0
# A batch that failed to store this many times is dropped (and logged), not retried forever.
MAX_FAILED_ATTEMPTS = 3
# Decompressing is bounded again here: what the API accepted fits in this.
_MAX_PLAIN_BYTES = 256 * 1024 * 1024

# Expired traces are deleted this many at a time, with a pause between, so that deleting a
# month of traces never holds locks or I/O long enough to slow ingestion.
EXPIRED_PER_BATCH = 2_000
EXPIRY_PAUSE_S = 0.2

# A trace stores at most this many spans.
MAX_SPANS_PER_TRACE = 10_000

TraceKey = tuple[UUID, str]


async def read_waiting_traces(pool: asyncpg.Pool, limits: TraceLimits | None = None) -> None:
    """Read batches until none wait, resting between passes as long as each took: reading
    traces takes at most about half of a worker, whatever arrives, and its run lanes the
    rest. A backlog waits in the inbox; more workers read it faster."""
    while True:
        began = time.perf_counter()
        if not await read_some(pool, BATCHES_PER_PASS, limits):
            return
        await asyncio.sleep((time.perf_counter() - began) * REST_PER_PASS)


class _PassFailed(Exception):
    """Storing the batches of a pass failed; they are back on the inbox."""

    def __init__(self, batch_ids: list[int]) -> None:
        super().__init__(batch_ids)
        self.batch_ids = batch_ids


Claim = Callable[[Connection], Awaitable[list[db.ClaimedBatch]]]


async def read_some(pool: asyncpg.Pool, limit: int, limits: TraceLimits | None = None) -> int:
    """Read up to `limit` waiting batches in one transaction; how many were taken."""
    limits = limits or TraceLimits()
    try:
        claim_some = partial(db.claim_batches, limit=limit, budget_bytes=PASS_BYTES)
        return await _read_pass(pool, claim_some, limits)
    except _PassFailed as failed:
        # Each alone, so that only a batch that fails by itself is counted against it: one
        # project's bad batch never costs another project's batches their attempts.
        for batch_id in failed.batch_ids:
            try:
                await _read_pass(pool, partial(db.claim_batch, batch_id=batch_id), limits)
            except _PassFailed:
                await db.note_failed(pool, [batch_id])
        return len(failed.batch_ids)


async def _read_pass(pool: asyncpg.Pool, claim: Claim, limits: TraceLimits) -> int:
    """Claim batches, store their spans and sum up their traces, in one transaction."""
    claimed_ids: list[int] = []
    try:
        async with pool.acquire() as connection, connection.transaction():
            batches = await claim(connection)
            claimed_ids = [batch.id for batch in batches]
            spans = await asyncio.to_thread(_spans_of_batches, batches)
            await _store(connection, spans, limits)
            return len(batches)
    except (asyncpg.PostgresError, OSError) as exc:
        if not claimed_ids:
            raise
        # Back on the inbox by the rollback; a batch failing alone is counted, so one that can
        # never be stored is eventually dropped instead of blocking the ones behind it.
        log.warning("storing %d trace batches failed: %s", len(claimed_ids), exc)
        raise _PassFailed(claimed_ids) from exc


def _spans_of_batches(batches: Sequence[db.ClaimedBatch]) -> list[tuple[UUID, Span]]:
    """Every span of these batches, with its project; unreadable batches are logged and left."""
    spans: list[tuple[UUID, Span]] = []
    for batch in batches:
        if batch.failed_attempts >= MAX_FAILED_ATTEMPTS:
            log.error("dropped trace batch %d: it failed to store %d times", batch.id,
                      batch.failed_attempts)  # fmt: skip
            continue
        try:
            plain = decompressed(batch.body, "gzip" if batch.gzipped else None, _MAX_PLAIN_BYTES)
            decoded = decode(plain, Encoding(batch.encoding))
        except OtlpError as exc:
            log.error("dropped trace batch %d: %s", batch.id, exc)
            continue
        spans.extend((batch.project_id, span) for span in decoded)
    return spans


async def _store(
    connection: Connection, spans: list[tuple[UUID, Span]], limits: TraceLimits
) -> None:
    """Store the spans and bring each trace they belong to up to date with the new ones."""
    if not spans:
        return
    arrived = _by_trace(spans)
    keys = sorted(arrived)
    held_before = await db.lock_traces(connection, keys)
    arrived = _within_cap(arrived, held_before)
    kept = [(key[0], span) for key, spans_kept in arrived.items() for span in spans_kept]
    columns = await asyncio.to_thread(_columns, kept, limits.summary_chars)
    stored = await db.insert_spans(connection, columns)
    # Only the spans stored now are summed up: a span sent again is in the summary already.
    fresh = {
        key: [span for span in _unique(arrived[key]) if (*key, span.span_id) in stored]
        for key in keys
    }
    seen_before = [key for key in keys if held_before.get(key)]
    before = await db.summaries_of(connection, seen_before) if seen_before else {}
    summaries = await asyncio.to_thread(_summaries, fresh, before, limits)
    await db.store_summaries(connection, summaries)


def _columns(spans: list[tuple[UUID, Span]], chars: int) -> list[list[Any]]:
    """The spans as stored (each long value cut), as the insert's columns."""
    return db.span_columns([(project_id, cut_span(span, chars)) for project_id, span in spans])


def _within_cap(
    arrived: dict[TraceKey, list[Span]], held_before: dict[TraceKey, int]
) -> dict[TraceKey, list[Span]]:
    """The arrived spans a trace still has room for; past MAX_SPANS_PER_TRACE, none."""
    kept: dict[TraceKey, list[Span]] = {}
    for key, spans in arrived.items():
        room = MAX_SPANS_PER_TRACE - held_before.get(key, 0)
        if len(spans) > room:
            log.warning("trace %s is over %d spans: %d not stored", key[1],
                        MAX_SPANS_PER_TRACE, len(spans) - max(room, 0))  # fmt: skip
        kept[key] = spans[: max(room, 0)]
    return kept


def _by_trace(spans: list[tuple[UUID, Span]]) -> dict[TraceKey, list[Span]]:
    grouped: dict[TraceKey, list[Span]] = {}
    for project_id, span in spans:
        grouped.setdefault((project_id, span.trace_id), []).append(span)
    return grouped


def _unique(spans: list[Span]) -> list[Span]:
    """The first of each span id, as storing keeps the first."""
    return list({span.span_id: span for span in reversed(spans)}.values())


def _summaries(
    fresh: dict[TraceKey, list[Span]],
    before: dict[TraceKey, TraceSummary],
    limits: TraceLimits,
) -> list[tuple[UUID, str, TraceSummary]]:
    """Each trace's summary joined with its new spans', cut to the limits; a trace that got
    no new span keeps the one it has."""
    return [
        (key[0], key[1], cut_summary(_summary(key, spans, before.get(key)), limits))
        for key, spans in fresh.items()
        if spans or key not in before
    ]


def _summary(key: TraceKey, spans: list[Span], before: TraceSummary | None) -> TraceSummary:
    try:
        new = summarise(spans)
    except Exception:  # a bug in reading one trace must not lose the spans of the others
        log.exception("summing up trace %s failed", key[1])
        new = TraceSummary(name=spans[0].name if spans else "", span_count=len(spans))
    return new if before is None else merged(before, new)


async def delete_expired_traces(pool: asyncpg.Pool) -> None:
    """Delete traces past their project's retention, a batch at a time, yielding between."""
    deleted = EXPIRED_PER_BATCH
    while deleted == EXPIRED_PER_BATCH:
        deleted = await db.delete_expired(pool, EXPIRED_PER_BATCH)
        await asyncio.sleep(EXPIRY_PAUSE_S)
