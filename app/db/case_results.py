"""Case results: one row per (run, test case, trial)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from agentlasso.db.pool import Connection, Executor
from agentlasso.db.test_cases import content_of
from agentlasso.domain.agent_calls import AgentCall, Attempt
from agentlasso.domain.case_results import (
    AwaitingJudge,
    JudgedResult,
    NewResult,
    Reported,
    StoredResult,
    TrialSummary,
)
from agentlasso.domain.conversations import PlayedConversation, SimulatedUsage, TurnRecord
from agentlasso.domain.grades import CaseResult, CheckResult, UngradedItem
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.runs import ResultFlags
from agentlasso.off_loop import in_slices, off_loop_when_many

# The NewResult struct's fields are the columns a result is written with.
RESULT_COLUMNS = NewResult.__struct_fields__
_FLAG_COLUMNS = "graded, pass_fail, errored, no_checks, judge_pending"

# Removing the results a batch replaces, returning what they contributed to the counters.
# Cases named by id are joined to an unnest() of the ids, never tested with `= ANY(ids)`: while
# a run's rows are newer than the planner's statistics it may walk the run's rows and test each
# against the whole array, which made a CI batch's cost grow with the run (a 10,000-result batch
# took 10 s at 90,000 results). A join probes the primary key or a hash instead.
_DELETE_REPLACED = f"""
DELETE FROM case_results c
USING unnest($3::uuid[]) AS k(test_case_id)
WHERE c.run_id = $1 AND c.trial = $2 AND c.test_case_id = k.test_case_id
RETURNING {_FLAG_COLUMNS}
"""

# Each row once: a chunk done twice (a re-run after a crash) inserts nothing the second time,
# and RETURNING names exactly the rows that count.
_INSERT_NEW = f"""
INSERT INTO case_results ({", ".join(RESULT_COLUMNS)})
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::uuid[], $5::text[], $6::bool[],
    $7::bool[], $8::bool[], $9::bool[], $10::float8[], $11::bool[], $12::text[], $13::jsonb[],
    $14::jsonb[], $15::bool[], $16::jsonb[], $17::bool[], $18::jsonb[], $19::int[], $20::jsonb[],
    $21::text[], $22::bool[], $23::jsonb[], $24::jsonb[], $25::text[], $26::int[], $27::jsonb[],
    $28::text[], $29::jsonb[])
ON CONFLICT (run_id, test_case_id, trial) DO NOTHING
RETURNING seq, test_case_id, trial, {_FLAG_COLUMNS}
"""

# The rows a judge chunk re-grades, locked, with what they counted for before.
_LOCK_PENDING = """
SELECT c.seq, c.graded, c.pass_fail, c.no_checks, c.errored, c.judge_pending,
       c.output_reported, c.actual_output, c.tool_calls_reported, c.actual_tool_calls,
       c.agent_error, c.agent_latency_ms, c.turns, c.ended_by, c.not_played_reason,
       r.input, r.conversation, r.checks_version, r.checks, r.evaluation_criteria_json,
       r.expected_output, r.evaluation_type, r.min_confidence, r.description, r.tags,
       r.tool_fixtures
FROM case_results c JOIN test_case_revisions r ON r.id = c.revision_id
WHERE c.run_id = $1 AND c.seq = ANY($2::bigint[]) AND c.judge_pending
FOR UPDATE OF c
"""

_PENDING_SEQS = """
SELECT c.seq FROM unnest($2::uuid[]) AS k(test_case_id)
JOIN case_results c ON c.run_id = $1 AND c.test_case_id = k.test_case_id
WHERE c.judge_pending
"""

_SET_JUDGED = """
UPDATE case_results c
SET outcome = u.outcome, graded = u.graded, pass_fail = u.pass_fail, score = u.score,
    partially_graded = u.partially_graded, judge_reasoning = u.judge_reasoning,
    check_results = u.check_results, judge_records = u.judge_records, judge_pending = false
FROM unnest($2::bigint[], $3::text[], $4::bool[], $5::bool[], $6::float8[], $7::bool[],
            $8::text[], $9::jsonb[], $10::jsonb[])
     AS u(seq, outcome, graded, pass_fail, score, partially_graded, judge_reasoning,
          check_results, judge_records)
WHERE c.run_id = $1 AND c.seq = u.seq
"""

_BY_IDS = """
SELECT c.* FROM unnest($2::uuid[]) AS k(test_case_id)
JOIN case_results c ON c.run_id = $1 AND c.test_case_id = k.test_case_id AND c.trial = 1
"""

# A primary-key probe per case whatever the statistics say (OFFSET 0 keeps the planner from
# flattening it): a join planned while the table was small scanned the whole run every chunk.
_EXISTING = """
SELECT k.test_case_id, c.trial FROM unnest($2::uuid[]) AS k(test_case_id)
CROSS JOIN LATERAL (
    SELECT trial FROM case_results c
    WHERE c.run_id = $1 AND c.test_case_id = k.test_case_id
    OFFSET 0
) c
"""

_PAGE = """
SELECT * FROM case_results
WHERE run_id = $1 AND seq > $2 AND ($3::text IS NULL OR outcome = $3)
ORDER BY seq
LIMIT $4
"""

_JSONB_COLUMNS = frozenset(
    RESULT_COLUMNS.index(name)
    for name in ("check_results", "ungraded_items", "actual_output", "actual_tool_calls",
                 "agent_attempts", "judge_records", "turns", "simulated_usage",
                 "agent_trace_ids")
)  # fmt: skip
_encoder = msgspec.json.Encoder()
_RECORDS = tuple[JudgeRecord, ...]


class Inserted(msgspec.Struct, frozen=True):
    """A result this write stored (not one stored before): its row id, its case and trial, and
    what it counts for."""

    seq: int
    test_case_id: UUID
    trial: int
    flags: ResultFlags


def _flags(row: asyncpg.Record) -> ResultFlags:
    return ResultFlags(
        graded=row["graded"],
        pass_fail=row["pass_fail"],
        errored=row["errored"],
        no_checks=row["no_checks"],
        judge_pending=row["judge_pending"],
    )


def _reported(row: asyncpg.Record) -> Reported:
    return Reported(
        actual_output=row["actual_output"] if row["output_reported"] else msgspec.UNSET,
        actual_tool_calls=row["actual_tool_calls"] if row["tool_calls_reported"] else msgspec.UNSET,
        latency_ms=row["agent_latency_ms"],
    )


def _stored(row: asyncpg.Record) -> StoredResult:
    # jsonb does not keep key order: converting restores the documented shapes.
    attempts = row["agent_attempts"]
    records = row["judge_records"]
    return StoredResult(
        seq=row["seq"], run_id=row["run_id"], test_case_id=row["test_case_id"],
        trial=row["trial"], revision_id=row["revision_id"],
        result=CaseResult(
            score=row["score"], pass_fail=row["pass_fail"], graded=row["graded"],
            partially_graded=row["partially_graded"], judge_reasoning=row["judge_reasoning"],
            check_results=msgspec.convert(row["check_results"], tuple[CheckResult, ...]),
            ungraded_items=msgspec.convert(row["ungraded_items"], tuple[UngradedItem, ...]),
        ),
        reported=_reported(row),
        agent_call=None if attempts is None else AgentCall(
            latency_ms=row["agent_latency_ms"],
            attempts=msgspec.convert(attempts, tuple[Attempt, ...]),
            error=row["agent_error"],
        ),
        judge_pending=row["judge_pending"],
        judge_records=None if records is None else msgspec.convert(records, _RECORDS),
        agent_error=row["agent_error"], created_at=row["created_at"],
        agent_trace_id=_single_trace_id(row),
        **_conversation_fields(row),
    )  # fmt: skip


def _single_trace_id(row: asyncpg.Record) -> str | None:
    """A single-turn result's one trace id (a conversation keeps one per turn, on its turns)."""
    ids = row["agent_trace_ids"]
    return ids[0] if ids and row["turns"] is None else None


def _conversation_fields(row: asyncpg.Record) -> dict[str, Any]:
    """A conversation's turns, ending, attempt and usage; nothing for a single-turn result."""
    turns = row["turns"]
    if turns is None:
        return {}
    usage = row["simulated_usage"]
    return {
        "turns": msgspec.convert(turns, tuple[TurnRecord, ...]),
        "ended_by": row["ended_by"],
        "conversation_attempt": row["conversation_attempt"],
        "simulated_usage": None if usage is None else msgspec.convert(usage, SimulatedUsage),
        "not_played_reason": row["not_played_reason"],
    }


def _as_jsonb_element(value: Any) -> msgspec.Raw | None:
    # Inside a jsonb[] parameter asyncpg would read a list or tuple as a nested array: send
    # each value as already-encoded JSON, which it passes through whole.
    return None if value is None else msgspec.Raw(_encoder.encode(value))


def _jsonb_column(values: Sequence[Any]) -> list[msgspec.Raw | None]:
    return [_as_jsonb_element(value) for value in values]


async def delete_replaced(
    connection: Connection, run_id: UUID, trial: int, test_case_ids: list[UUID]
) -> list[ResultFlags]:
    """Delete the existing results for these cases; returns what they counted for."""
    rows = await connection.fetch(_DELETE_REPLACED, run_id, trial, test_case_ids)
    return [_flags(row) for row in rows]


async def copy_results(connection: Connection, results: Sequence[NewResult]) -> None:
    """Store new results through COPY."""
    await connection.copy_records_to_table(
        "case_results",
        records=in_slices(msgspec.structs.astuple(result) for result in results),
        columns=RESULT_COLUMNS,
    )


async def insert_new(connection: Connection, results: Sequence[NewResult]) -> list[Inserted]:
    """Store the results not stored yet; returns the ones this call inserted."""
    if not results:
        return []
    rows = [msgspec.structs.astuple(result) for result in results]
    columns = [
        _jsonb_column(column) if index in _JSONB_COLUMNS else list(column)
        for index, column in enumerate(zip(*rows, strict=True))
    ]
    inserted = await connection.fetch(_INSERT_NEW, *columns)
    return [
        Inserted(row["seq"], row["test_case_id"], row["trial"], _flags(row)) for row in inserted
    ]


async def existing(
    executor: Executor, run_id: UUID, test_case_ids: list[UUID]
) -> set[tuple[UUID, int]]:
    """(test_case_id, trial) pairs of these cases that already have a result."""
    rows = await executor.fetch(_EXISTING, run_id, test_case_ids)
    return {(row["test_case_id"], row["trial"]) for row in rows}


async def list_results(
    executor: Executor, run_id: UUID, after_seq: int, outcome: str | None, limit: int
) -> list[StoredResult]:
    """A page of a run's results in the order they arrived."""
    return [_stored(row) for row in await executor.fetch(_PAGE, run_id, after_seq, outcome, limit)]


_ONE = "SELECT * FROM case_results WHERE run_id = $1 AND test_case_id = $2 AND trial = $3"


async def get_result(
    executor: Executor, run_id: UUID, test_case_id: UUID, trial: int
) -> StoredResult | None:
    """One (case, trial) result of the run, or None."""
    row = await executor.fetchrow(_ONE, run_id, test_case_id, trial)
    return None if row is None else _stored(row)


_BY_KEYS = """
SELECT r.* FROM unnest($2::uuid[], $3::int[]) AS k(test_case_id, trial)
JOIN case_results r ON r.run_id = $1 AND r.test_case_id = k.test_case_id AND r.trial = k.trial
"""


async def results_by_key(
    executor: Executor, run_id: UUID, keys: list[tuple[UUID, int]]
) -> dict[tuple[UUID, int], StoredResult]:
    """These (case, trial) results of the run, by key (those it lacks are absent)."""
    if not keys:
        return {}
    cases, trials = zip(*keys, strict=True)
    rows = await executor.fetch(_BY_KEYS, run_id, list(cases), list(trials))
    return {(row["test_case_id"], row["trial"]): _stored(row) for row in rows}


_TRIALS = """
SELECT k.test_case_id, t.pass_at_k, t.pass_all_k
FROM unnest($2::uuid[]) AS k(test_case_id),
     -- A page's few cases, each looked up by primary key, however stale the statistics.
     LATERAL (SELECT bool_or(c.outcome = 'passed') AS pass_at_k,
                     bool_and(c.outcome = 'passed') AS pass_all_k
              FROM case_results c WHERE c.run_id = $1 AND c.test_case_id = k.test_case_id) t
WHERE t.pass_at_k IS NOT NULL
"""


async def trial_summaries(
    executor: Executor, run_id: UUID, test_case_ids: list[UUID]
) -> dict[UUID, TrialSummary]:
    """Each of these cases' trials in the run taken together, by case."""
    if not test_case_ids:
        return {}
    rows = await executor.fetch(_TRIALS, run_id, list(set(test_case_ids)))
    return {
        row["test_case_id"]: TrialSummary(pass_at_k=row["pass_at_k"], pass_all_k=row["pass_all_k"])
        for row in rows
    }


_FIRST_TRIALS = """
SELECT * FROM case_results WHERE run_id = $1 AND trial = 1 AND seq > $2 ORDER BY seq LIMIT $3
"""
_CASES = "SELECT count(*) FROM case_results WHERE run_id = $1 AND trial = 1"


async def first_trials(
    executor: Executor, run_id: UUID, after_seq: int, limit: int
) -> list[StoredResult]:
    """A page of the run's first-trial results, in the order they arrived."""
    rows = await executor.fetch(_FIRST_TRIALS, run_id, after_seq, limit)
    return [_stored(row) for row in rows]


async def count_cases(executor: Executor, run_id: UUID) -> int:
    """How many cases have a (first-trial) result in the run."""
    count: int = await executor.fetchval(_CASES, run_id)
    return count


async def lock_pending(
    connection: Connection, run_id: UUID, seqs: Sequence[int]
) -> list[AwaitingJudge]:
    """The results still waiting for verdicts among these, locked, with the cases they grade."""
    rows = await connection.fetch(_LOCK_PENDING, run_id, list(seqs))
    return [_awaiting(row) for row in rows]


def _awaiting(row: asyncpg.Record) -> AwaitingJudge:
    return AwaitingJudge(
        seq=row["seq"],
        flags=_flags(row),
        reported=_reported(row),
        agent_error=row["agent_error"],
        content=content_of(row),
        played=None if row["turns"] is None else PlayedConversation(
            turns=msgspec.convert(row["turns"], tuple[TurnRecord, ...]), ended_by=row["ended_by"],
            not_graded_reason=row["not_played_reason"],
        ),
    )  # fmt: skip


async def pending_seqs(executor: Executor, run_id: UUID, test_case_ids: list[UUID]) -> list[int]:
    """Which of these cases' results wait for the judge (their row ids)."""
    return [row["seq"] for row in await executor.fetch(_PENDING_SEQS, run_id, test_case_ids)]


async def set_judged(connection: Connection, run_id: UUID, judged: Sequence[JudgedResult]) -> None:
    """Replace provisional grades with the final ones."""
    results = [case.result for case in judged]
    await connection.execute(
        _SET_JUDGED,
        run_id,
        [case.seq for case in judged],
        [result.outcome for result in results],
        [result.graded for result in results],
        [result.pass_fail for result in results],
        [result.score for result in results],
        [result.partially_graded for result in results],
        [result.judge_reasoning for result in results],
        _jsonb_column([result.check_results for result in results]),
        _jsonb_column([case.records for case in judged]),
    )


async def results_of_cases(
    executor: Executor, run_id: UUID, test_case_ids: list[UUID]
) -> list[StoredResult]:
    """The stored results of these cases (trial 1: CI mode)."""
    rows = await executor.fetch(_BY_IDS, run_id, test_case_ids)
    return await off_loop_when_many(len(rows), lambda: [_stored(row) for row in rows])


# Over its trials, a case failed if any trial failed, else passed if any passed.
_OUTCOMES = """
SELECT test_case_id,
       CASE WHEN bool_or(outcome = 'failed') THEN 'failed'
            WHEN bool_or(outcome = 'passed') THEN 'passed'
            ELSE 'not_graded' END AS outcome
FROM case_results WHERE run_id = $1 AND test_case_id = ANY($2::uuid[])
GROUP BY test_case_id
"""


async def outcomes(executor: Executor, run_id: UUID, test_case_ids: list[UUID]) -> dict[UUID, str]:
    """How these cases came out in the run (those it has no result for are absent)."""
    rows = await executor.fetch(_OUTCOMES, run_id, test_case_ids)
    return {row["test_case_id"]: row["outcome"] for row in rows}
