"""A judge chunk in a worker: ask for the verdicts its results wait for, then re-grade them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from app.db import case_results as result_rows
from app.db import chunks as chunk_rows
from app.db import datasets as dataset_rows
from app.db import judge_cache
from app.db import runs as run_rows
from app.db.pool import Connection
from app.domain.results import CaseResult, JudgeVerdict, Observation
from app.grading import grade_case, judge_requests, observation_from_wire
from app.judge import cost_usd
from app.services.judge_calls import CachedAnswer, Judge, JudgeRecord, RunJudging
from app.services.judging import NO_JUDGE
from app.services.result_rows import counter_delta, outcome_of
from app.services.runs import FINAL_STATUSES, store_gate
from app.services.test_cases import content_from_row
from app.services.worker_state import WorkerState


class JudgedCase(msgspec.Struct, frozen=True):
    """A result's new grade, with the verdict records behind it."""

    seq: int
    result: CaseResult
    records: list[JudgeRecord]


class PgJudgeCache:
    """The judge's verdict cache, in PostgreSQL."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def get(self, key: str) -> CachedAnswer | None:
        row = await judge_cache.get(self.pool, key)
        return None if row is None else msgspec.convert(row["answer"], CachedAnswer)

    async def put(self, key: str, answer: CachedAnswer) -> None:
        await judge_cache.put(self.pool, key, answer.model, answer)


async def judge_chunk(
    state: WorkerState, run_id: UUID, chunk_no: int, job_id: str, seqs: list[int]
) -> None:
    """Judge the chunk's results and store their final grades; hand it back on SIGTERM."""
    state.held.add((run_id, chunk_no))
    try:
        run = await run_rows.run_by_id(state.pool, run_id)
        judged: list[JudgedCase] = []
        if run is not None and run["status"] not in FINAL_STATUSES:
            judged = await _judge_rows(state, state.judge, run, seqs)
        await _store(state, run_id, chunk_no, job_id, judged)
    except asyncio.CancelledError:
        await asyncio.shield(chunk_rows.hand_back(state.pool, run_id, chunk_no, job_id))
        raise
    finally:
        state.held.discard((run_id, chunk_no))


async def _judge_rows(
    state: WorkerState, judge: Judge | None, run: asyncpg.Record, seqs: list[int]
) -> list[JudgedCase]:
    async with state.pool.acquire() as connection, connection.transaction():
        rows = await result_rows.lock_pending(connection, run["id"], seqs)
    dataset = await dataset_rows.get_dataset(state.pool, run["project_id"], run["dataset_id"])
    context = dataset["data_context"] if dataset else None
    # A worker without a judge key (configured unlike the API) settles the cases rather than
    # leaving the run waiting for verdicts that would never come.
    stopped = run["judge_stopped"] or state.judge_stopped.get(run["id"])
    if judge is None:
        stopped = NO_JUDGE
    judging = RunJudging(use_cache=run["judge_use_cache"], stopped=stopped)
    # The first case alone: if the judge's key is refused, the rest are not sent at all.
    judged = [await _judge_row(judge, row, context, judging) for row in rows[:1]]
    judged += await asyncio.gather(*(_judge_row(judge, row, context, judging) for row in rows[1:]))
    if judging.stopped is not None:
        state.judge_stopped[run["id"]] = judging.stopped
    return judged


async def _judge_row(
    judge: Judge | None, row: asyncpg.Record, context: dict[str, Any] | None, judging: RunJudging
) -> JudgedCase:
    content = content_from_row(row)
    observation = _stored_observation(row)
    verdicts: dict[str, JudgeVerdict] = {}
    records: list[JudgeRecord] = []
    for request in judge_requests(content, observation):
        if judge is None or judging.stopped is not None:
            verdicts[request.check_id] = JudgeVerdict.unavailable(judging.stopped or NO_JUDGE)
            continue
        verdict, record = await judge.verdict(request, content, observation, context, judging)
        if record.refused:
            # Every later call would be refused the same way: this run judges no more.
            judging.stopped = verdict.not_graded_reason
        verdicts[request.check_id] = verdict
        records.append(record)
    return JudgedCase(
        seq=row["seq"], result=grade_case(content, observation, verdicts), records=records
    )


def _stored_observation(row: asyncpg.Record) -> Observation:
    return observation_from_wire(
        row["actual_output"],
        row["actual_tool_calls"],
        output_reported=row["output_reported"],
        tool_calls_reported=row["tool_calls_reported"],
        agent_error=row["agent_error"],
    )


async def _store(
    state: WorkerState, run_id: UUID, chunk_no: int, job_id: str, judged: list[JudgedCase]
) -> None:
    """Replace provisional grades, move counters and usage, and end the run if it is done."""
    async with state.pool.acquire() as connection, connection.transaction():
        run = await run_rows.lock_run_by_id(connection, run_id)
        assert run is not None
        # Results replaced since (a CI client posting a case again) are no longer pending.
        still = {
            row["seq"]: row
            for row in await result_rows.lock_pending(connection, run_id, [j.seq for j in judged])
        }
        judged = [case for case in judged if case.seq in still]  # fmt: skip
        if judged:
            await result_rows.set_judged(connection, run_id, [_judged_row(case) for case in judged])
            before = [still[case.seq] for case in judged]
            after = [_final_flags(case, still[case.seq]) for case in judged]
            run = await run_rows.apply_counts(connection, run_id, counter_delta(after, before))
            run = await _add_usage(state, connection, run_id, judged)
        await chunk_rows.finish(connection, run_id, chunk_no, job_id)
        was_final = run["status"] in FINAL_STATUSES
        run = await store_gate(connection, run)
        kind = "final" if run["status"] in FINAL_STATUSES and not was_final else "progress"
        await run_rows.notify(connection, run_id, kind)


def _judged_row(case: JudgedCase) -> tuple[Any, ...]:
    result = case.result
    return (
        case.seq, outcome_of(result), result.graded, result.pass_fail, result.score,
        result.partially_graded, result.judge_reasoning, result.check_results, case.records,
    )  # fmt: skip


def _final_flags(case: JudgedCase, before: asyncpg.Record) -> dict[str, Any]:
    """The counted flags of a result once its verdicts replaced the provisional grade."""
    return {
        "graded": case.result.graded,
        "pass_fail": case.result.pass_fail,
        "errored": before["errored"],
        "no_checks": before["no_checks"],
        "judge_pending": False,
    }


async def _add_usage(
    state: WorkerState, connection: Connection, run_id: UUID, judged: Sequence[JudgedCase]
) -> asyncpg.Record:
    records = [record for case in judged for record in case.records]
    prices = state.settings.judge_prices
    usage = (
        sum(r.calls for r in records),
        sum(r.cached for r in records),
        sum(r.usage.input_tokens for r in records),
        sum(r.usage.output_tokens for r in records),
        sum(r.usage.cache_read_input_tokens for r in records),
        sum(r.usage.cache_creation_input_tokens for r in records),
        sum(cost_usd(r.usage, r.model, prices) for r in records if not r.cached),
    )
    refused = next((r.not_graded_reason for r in records if r.refused), None)
    return await run_rows.add_judge_usage(connection, run_id, usage, refused)
