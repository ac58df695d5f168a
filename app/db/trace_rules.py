"""Trace rules and their evaluations: what each rule graded of the project's traces."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from agentlasso.db.pool import Connection, Executor, jsonb_text
from agentlasso.domain.grades import CaseResult
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.domain.trace_rules import (
    Candidate,
    Evaluation,
    TraceFilter,
    TraceRule,
    TraceToGrade,
)

_COLUMNS = (
    "id, project_id, name, filter, sample_rate, content, daily_judge_budget_usd, "
    "backfill_hours, created_at"
)


def _rule(row: asyncpg.Record) -> TraceRule:
    return TraceRule(
        id=row["id"], project_id=row["project_id"], name=row["name"],
        filter=msgspec.convert(row["filter"], TraceFilter),
        sample_rate=row["sample_rate"],
        content=msgspec.convert(row["content"], TestCaseContent),
        daily_judge_budget_usd=row["daily_judge_budget_usd"],
        backfill_hours=row["backfill_hours"], created_at=row["created_at"],
    )  # fmt: skip


_INSERT = f"""
INSERT INTO trace_rules (id, project_id, name, filter, sample_rate, content,
                         daily_judge_budget_usd, backfill_hours, seen_until)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() - make_interval(hours => $8))
RETURNING {_COLUMNS}
"""


async def insert_rule(executor: Executor, rule: TraceRule) -> TraceRule:
    """Store a new rule; it looks at traces from `backfill_hours` ago on."""
    row = await executor.fetchrow(
        _INSERT, rule.id, rule.project_id, rule.name, msgspec.to_builtins(rule.filter),
        rule.sample_rate, msgspec.to_builtins(rule.content), rule.daily_judge_budget_usd,
        rule.backfill_hours,
    )  # fmt: skip
    assert row is not None
    return _rule(row)


_LIST = f"SELECT {_COLUMNS} FROM trace_rules WHERE project_id = $1 ORDER BY created_at DESC, id"
_GET = f"SELECT {_COLUMNS} FROM trace_rules WHERE project_id = $1 AND id = $2"
_DELETE = "DELETE FROM trace_rules WHERE project_id = $1 AND id = $2 RETURNING name"


async def list_rules(executor: Executor, project_id: UUID) -> list[TraceRule]:
    """The project's rules, newest first."""
    return [_rule(row) for row in await executor.fetch(_LIST, project_id)]


async def get_rule(executor: Executor, project_id: UUID, rule_id: UUID) -> TraceRule | None:
    """One of the project's rules."""
    row = await executor.fetchrow(_GET, project_id, rule_id)
    return None if row is None else _rule(row)


async def delete_rule(executor: Executor, project_id: UUID, rule_id: UUID) -> str | None:
    """Delete a rule and its evaluations; its name, or None when it is not the project's."""
    name: str | None = await executor.fetchval(_DELETE, project_id, rule_id)
    return name


# One rule at a time per worker: a rule another worker is claiming for is skipped.
_LOCK_NEXT = f"""
SELECT {_COLUMNS}, seen_until, seen_until_trace FROM trace_rules
WHERE id <> ALL($1::uuid[])
ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1
"""

# Traces whose last span arrived after the rule's mark and at least the settle time ago. The
# row comparison names the index's columns in its order, so the scan starts at the mark
# (compared on (updated_at, trace_id) alone, it would read the project's traces from the first).
_QUIET = """
SELECT trace_id, updated_at, span_count, name, tool_names, error IS NOT NULL AS has_error,
       conversation_id
FROM traces
WHERE project_id = $1 AND (project_id, updated_at, trace_id) > ($1, $2, $3)
  AND updated_at <= now() - make_interval(secs => $4)
ORDER BY updated_at, trace_id
LIMIT $5
"""

_WITH_ATTRIBUTES = """
SELECT DISTINCT trace_id FROM trace_spans
WHERE project_id = $1 AND trace_id = ANY($2::text[]) AND (attributes @> $3 OR resource @> $3)
"""

_MARK = "UPDATE trace_rules SET seen_until = $2, seen_until_trace = $3 WHERE id = $1"

# A trace graded before at the same span count is not graded again; a version not graded yet,
# or one a worker claimed and lost, is (claimed now).
_CLAIM = """
INSERT INTO trace_evaluations AS e (rule_id, project_id, trace_id, span_count, status)
SELECT $1, $2, trace_id, span_count, 'pending'
FROM unnest($3::text[], $4::int[]) AS c (trace_id, span_count)
ON CONFLICT (rule_id, trace_id) DO UPDATE
    SET span_count = excluded.span_count, status = 'pending', claimed_at = now()
    WHERE e.span_count <> excluded.span_count
RETURNING trace_id, span_count
"""

_RECLAIM = """
UPDATE trace_evaluations SET claimed_at = now()
WHERE rule_id = $1 AND status = 'pending' AND claimed_at < now() - make_interval(secs => $2)
RETURNING trace_id, span_count
"""


class Claimed(msgspec.Struct, frozen=True, kw_only=True):
    """Traces a worker claimed to grade for a rule: (trace id, span count) each."""

    rule: TraceRule
    traces: list[tuple[str, int]]


def _candidate(row: asyncpg.Record) -> Candidate:
    return Candidate(
        trace_id=row["trace_id"], updated_at=row["updated_at"], span_count=row["span_count"],
        name=row["name"], tool_names=tuple(row["tool_names"]), has_error=row["has_error"],
        conversation_id=row["conversation_id"],
    )  # fmt: skip


async def lock_next_rule(
    connection: Connection, skip: Sequence[UUID]
) -> tuple[TraceRule, tuple[datetime, str]] | None:
    """Lock a rule no other worker holds (for this transaction), with how far it has looked."""
    row = await connection.fetchrow(_LOCK_NEXT, list(skip))
    if row is None:
        return None
    return _rule(row), (row["seen_until"], row["seen_until_trace"])


async def quiet_traces(
    connection: Connection, rule: TraceRule, mark: tuple[datetime, str], settle_s: float, limit: int
) -> list[Candidate]:
    """The traces that went quiet after the rule's mark, oldest first."""
    rows = await connection.fetch(_QUIET, rule.project_id, *mark, settle_s, limit)
    return [_candidate(row) for row in rows]


async def with_attributes(
    connection: Connection, project_id: UUID, trace_ids: Sequence[str], attributes: dict[str, str]
) -> set[str]:
    """Which of these traces has a span (or a resource) carrying all the attributes."""
    rows = await connection.fetch(_WITH_ATTRIBUTES, project_id, list(trace_ids), attributes)
    return {row["trace_id"] for row in rows}


async def claim(
    connection: Connection,
    rule: TraceRule,
    chosen: Sequence[Candidate],
    moved_to: tuple[datetime, str] | None,
    reclaim_after_s: float,
) -> list[tuple[str, int]]:
    """Claim the chosen traces' versions not graded yet, and those lost by another worker;
    move the rule's mark on (None: no trace went quiet past it, and it stays). A round with
    nothing new writes nothing: every rule is looked at every second by every worker."""
    rows: list[asyncpg.Record] = []
    if chosen:
        trace_ids = [candidate.trace_id for candidate in chosen]
        span_counts = [candidate.span_count for candidate in chosen]
        rows += await connection.fetch(_CLAIM, rule.id, rule.project_id, trace_ids, span_counts)
    rows += await connection.fetch(_RECLAIM, rule.id, reclaim_after_s)
    if moved_to is not None:
        await connection.execute(_MARK, rule.id, *moved_to)
    return list(dict.fromkeys((row["trace_id"], row["span_count"]) for row in rows))


_STORE = """
UPDATE trace_evaluations AS e
SET status = 'graded', graded_at = now(), times_graded = times_graded + 1,
    passed = g.passed, graded = g.graded, trace_error = g.trace_error,
    duration_ms = g.duration_ms, judge_cost_usd = g.cost, result = g.result::jsonb
FROM unnest($2::text[], $3::int[], $4::bool[], $5::bool[], $6::bool[], $7::bigint[],
            $8::float8[], $9::text[])
    AS g (trace_id, span_count, passed, graded, trace_error, duration_ms, cost, result)
WHERE e.rule_id = $1 AND e.trace_id = g.trace_id AND e.span_count = g.span_count
"""


class Graded(msgspec.Struct, frozen=True, kw_only=True):
    """A trace's grade by a rule, to store."""

    trace_id: str
    span_count: int
    result: CaseResult
    trace_error: bool
    duration_ms: int
    judge_cost_usd: float


async def store_grades(executor: Executor, rule_id: UUID, grades: Sequence[Graded]) -> None:
    """Store grades of the versions claimed (a version claimed again since is left to it)."""
    if not grades:
        return
    columns: list[list[Any]] = [[] for _ in range(8)]
    for graded in grades:
        values = (
            graded.trace_id, graded.span_count, graded.result.pass_fail, graded.result.graded,
            graded.trace_error, graded.duration_ms, graded.judge_cost_usd,
            jsonb_text(graded.result),
        )  # fmt: skip
        for column, value in zip(columns, values, strict=True):
            column.append(value)
    await executor.execute(_STORE, rule_id, *columns)


_SPENT = "SELECT cost_usd FROM trace_rule_spend WHERE rule_id = $1 AND day = $2"
_SPEND = """
INSERT INTO trace_rule_spend (rule_id, day, cost_usd) VALUES ($1, $2, $3)
ON CONFLICT (rule_id, day) DO UPDATE SET cost_usd = trace_rule_spend.cost_usd + excluded.cost_usd
"""


async def spent_on(executor: Executor, rule_id: UUID, day: date) -> float:
    """What the rule's judge checks spent on this UTC day."""
    spent: float | None = await executor.fetchval(_SPENT, rule_id, day)
    return spent or 0.0


async def add_spend(executor: Executor, rule_id: UUID, day: date, cost_usd: float) -> None:
    """Count judge spend against the rule's day."""
    if cost_usd > 0:
        await executor.execute(_SPEND, rule_id, day, cost_usd)


_OF_TRACE = """
SELECT e.rule_id, r.name AS rule_name, e.trace_id, e.span_count, e.times_graded, e.graded_at,
       e.result, e.judge_cost_usd
FROM trace_evaluations e JOIN trace_rules r ON r.id = e.rule_id
WHERE e.project_id = $1 AND e.trace_id = $2 AND e.times_graded > 0
ORDER BY r.name, r.id
"""


def _evaluation(row: asyncpg.Record) -> Evaluation:
    return Evaluation(
        rule_id=row["rule_id"], rule_name=row["rule_name"], trace_id=row["trace_id"],
        span_count=row["span_count"], times_graded=row["times_graded"],
        graded_at=row["graded_at"], result=msgspec.convert(row["result"], CaseResult),
        judge_cost_usd=row["judge_cost_usd"],
    )  # fmt: skip


async def evaluations_of_trace(
    executor: Executor, project_id: UUID, trace_id: str
) -> list[Evaluation]:
    """Every rule's latest grade of the trace (a version being graded again shows the last)."""
    return [_evaluation(row) for row in await executor.fetch(_OF_TRACE, project_id, trace_id)]


_STATS = """
SELECT count(*) AS evaluated,
       count(*) FILTER (WHERE graded AND passed) AS passed,
       count(*) FILTER (WHERE graded AND NOT passed) AS failed,
       count(*) FILTER (WHERE NOT graded) AS not_graded
FROM trace_evaluations WHERE rule_id = $1 AND times_graded > 0
"""

_FAILURES = """
SELECT e.rule_id, r.name AS rule_name, e.trace_id, e.span_count, e.times_graded, e.graded_at,
       e.result, e.judge_cost_usd
FROM trace_evaluations e JOIN trace_rules r ON r.id = e.rule_id
WHERE e.rule_id = $1 AND e.status = 'graded' AND e.graded AND NOT e.passed
ORDER BY e.graded_at DESC, e.trace_id LIMIT $2
"""


async def rule_counts(executor: Executor, rule_id: UUID) -> asyncpg.Record:
    """How many traces the rule graded, passed, failed and could not grade."""
    row = await executor.fetchrow(_STATS, rule_id)
    assert row is not None
    return row


async def recent_failures(executor: Executor, rule_id: UUID, limit: int) -> list[Evaluation]:
    """The rule's latest failed traces, newest first."""
    return [_evaluation(row) for row in await executor.fetch(_FAILURES, rule_id, limit)]


_TO_GRADE = """
SELECT trace_id, input, output, tool_calls, error, duration_ms, conversation_id
FROM traces WHERE project_id = $1 AND trace_id = ANY($2::text[])
"""

# Each conversation's latest trace (what its grade is kept on), its version (the spans of all
# its traces), and whether all of it has been quiet for the settle time.
_CONVERSATION_HEADS = """
SELECT DISTINCT ON (conversation_id) conversation_id, trace_id,
       sum(span_count) OVER whole AS span_count,
       max(updated_at) OVER whole <= now() - make_interval(secs => $3) AS quiet
FROM traces WHERE project_id = $1 AND conversation_id = ANY($2::text[])
WINDOW whole AS (PARTITION BY conversation_id)
ORDER BY conversation_id, started_at DESC, trace_id DESC
"""

_CONVERSATION_TURNS = """
SELECT trace_id, input, output, tool_calls, error, duration_ms, conversation_id
FROM traces WHERE project_id = $1 AND conversation_id = $2
ORDER BY started_at, trace_id LIMIT $3
"""


async def conversation_heads(
    executor: Executor, project_id: UUID, conversation_ids: Sequence[str], settle_s: float
) -> dict[str, tuple[str, int, bool]]:
    """Per conversation: its latest trace, its version and whether it is quiet."""
    rows = await executor.fetch(_CONVERSATION_HEADS, project_id, list(conversation_ids), settle_s)
    return {r["conversation_id"]: (r["trace_id"], r["span_count"], r["quiet"]) for r in rows}


async def conversation_turns(
    executor: Executor, project_id: UUID, conversation_id: str, limit: int
) -> list[TraceToGrade]:
    """A conversation's traces, earliest first: what grading reads of each turn."""
    rows = await executor.fetch(_CONVERSATION_TURNS, project_id, conversation_id, limit)
    return [TraceToGrade(**dict(row)) for row in rows]


async def traces_to_grade(
    executor: Executor, project_id: UUID, trace_ids: Sequence[str]
) -> dict[str, TraceToGrade]:
    """What grading reads of these traces (those the project still has), by id: only the
    columns a check reads, not the messages or the spans."""
    rows = await executor.fetch(_TO_GRADE, project_id, list(trace_ids))
    return {row["trace_id"]: TraceToGrade(**dict(row)) for row in rows}


_HOURLY_OUTCOMES = """
SELECT date_trunc('hour', graded_at) AS hour,
       count(*) FILTER (WHERE passed) AS passed, count(*) AS graded
FROM trace_evaluations
WHERE rule_id = $1 AND status = 'graded' AND graded AND graded_at >= now() - $2::interval
GROUP BY 1 ORDER BY 1
"""


async def pass_rate_by_hour(
    executor: Executor, rule_id: UUID, over: timedelta
) -> list[tuple[datetime, int, int]]:
    """Per hour graded in, the rule's passed and graded traces (hours with none left out)."""
    rows = await executor.fetch(_HOURLY_OUTCOMES, rule_id, over)
    return [(row["hour"], row["passed"], row["graded"]) for row in rows]
