"""A judge chunk in a worker: ask for the verdicts its results wait for, then re-grade them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from agentlasso.db import case_results, judge_warnings
from agentlasso.db import chunks as chunk_rows
from agentlasso.db import datasets as dataset_rows
from agentlasso.db import runs as run_rows
from agentlasso.db.run_counts import JudgeSpend
from agentlasso.domain.case_results import AwaitingJudge, JudgedResult
from agentlasso.domain.grades import DeclaredTools, JudgeVerdict, Observation
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.runs import Run
from agentlasso.grading import verdicts_needed
from agentlasso.grading.conversation import whole_observation
from agentlasso.judge.calls import Judge, RunJudging
from agentlasso.judge.judging import NO_JUDGE
from agentlasso.judge.pricing import cost_usd
from agentlasso.observability import metrics
from agentlasso.services import recording
from agentlasso.services.grading_pool import grade_off_loop
from agentlasso.services.run_settling import settle_run
from agentlasso_workers.state import WorkerState


async def judge_chunk(
    state: WorkerState, run_id: UUID, chunk_no: int, job_id: str, seqs: Sequence[int]
) -> None:
    """Judge the chunk's results and store their final grades; hand it back on SIGTERM."""
    state.held.add((run_id, chunk_no))
    try:
        run = await run_rows.run_by_id(state.pool, run_id)
        judged: list[JudgedResult] = []
        if run is not None and not run.is_final:
            judged = await _judge_results(state, state.judge, run, seqs)
        await _store(state, run_id, chunk_no, job_id, judged)
    except asyncio.CancelledError:
        await asyncio.shield(chunk_rows.hand_back(state.pool, run_id, chunk_no, job_id))
        raise
    finally:
        state.held.discard((run_id, chunk_no))


async def _judge_results(
    state: WorkerState, judge: Judge | None, run: Run, seqs: Sequence[int]
) -> list[JudgedResult]:
    async with state.pool.acquire() as connection, connection.transaction():
        waiting = await case_results.lock_pending(connection, run.id, seqs)
    dataset = await dataset_rows.get_dataset(state.pool, run.project_id, run.dataset_id)
    context = dataset.data_context if dataset else None
    # A worker without a judge key (configured unlike the API) settles the cases rather than
    # leaving the run waiting for verdicts that would never come.
    stopped = run.judge_stopped or state.judge_stopped.get(run.id)
    client = await state.judge_clients.for_project(run.project_id)
    if judge is None or client is None:
        stopped = NO_JUDGE
    judging = RunJudging(
        project_id=run.project_id, client=client, use_cache=run.judge_use_cache, stopped=stopped,
        server_key=await state.judge_clients.uses_server_key(run.project_id),
    )  # fmt: skip
    tools = await run_rows.declared_tools(state.pool, run.id)
    doubted = await judge_warnings.doubted_criteria(state.pool, run.id)
    # The first case alone: if the judge's key is refused, the rest are not sent at all.
    budget_s = state.settings.grading_budget_s
    judged = [
        await _judge_one(judge, case, context, judging, (budget_s, tools, doubted))
        for case in waiting[:1]
    ]
    judged += await asyncio.gather(
        *(
            _judge_one(judge, case, context, judging, (budget_s, tools, doubted))
            for case in waiting[1:]
        )
    )
    if judging.stopped is not None:
        state.judge_stopped[run.id] = judging.stopped
    return judged


async def _judge_one(
    judge: Judge | None,
    case: AwaitingJudge,
    context: dict[str, Any] | None,
    judging: RunJudging,
    grading: tuple[float, DeclaredTools | None, dict[str, str]],
) -> JudgedResult:
    budget_s, tools, doubted = grading
    answer = recording.stored_answer(case)
    # A conversation's requests carry the transcript and reply they judge.
    observation = answer if isinstance(answer, Observation) else whole_observation(answer)
    verdicts: dict[str, JudgeVerdict] = {}
    records: list[JudgeRecord] = []
    for request in verdicts_needed(case.content, answer):
        if judge is None or judging.stopped is not None:
            verdicts[request.check_id] = JudgeVerdict.unavailable(judging.stopped or NO_JUDGE)
            continue
        verdict, record = await judge.verdict(request, case.content, observation, context, judging)
        if record.refused:
            # Every later call would be refused the same way: this run judges no more.
            judging.stopped = verdict.not_graded_reason
        reason = doubted.get(request.criterion) if request.kind == "llm_judge" else None
        if reason is not None and verdict.passed is False:
            # The project counts this criterion's failures as not graded (section 15).
            verdict = JudgeVerdict.unavailable(reason)
        verdicts[request.check_id] = verdict
        records.append(record)
    result = await grade_off_loop(
        lambda out_of_time: recording.regrade(case, verdicts, out_of_time, tools), budget_s
    )
    return JudgedResult(seq=case.seq, result=result, records=tuple(records))


async def _store(
    state: WorkerState, run_id: UUID, chunk_no: int, job_id: str, judged: list[JudgedResult]
) -> None:
    """Put the final grades in and finish the judge chunk, then settle the run (its last
    verdict may be among them)."""
    async with state.pool.acquire() as connection, connection.transaction():
        await recording.store_verdicts(
            connection, run_id, judged, lambda judged: _spend(state, judged)
        )
        await chunk_rows.finish(connection, run_id, chunk_no, job_id)
        # Unthrottled: a CI batch waiting for these verdicts looks again when woken.
        await run_rows.notify(connection, run_id, "progress")
    await settle_run(state.pool, run_id)


def _spend(state: WorkerState, judged: Sequence[JudgedResult]) -> tuple[JudgeSpend, str | None]:
    """What the verdicts cost, and why the run judges no more when a call was refused."""
    records = [record for case in judged for record in case.records]
    prices = state.settings.judge_prices
    spend = JudgeSpend(
        calls=sum(r.calls for r in records),
        cached=sum(r.cached for r in records),
        input_tokens=sum(r.usage.input_tokens for r in records),
        output_tokens=sum(r.usage.output_tokens for r in records),
        cache_read_tokens=sum(r.usage.cache_read_input_tokens for r in records),
        cache_write_tokens=sum(r.usage.cache_creation_input_tokens for r in records),
        cost_usd=sum(cost_usd(r.usage, r.model, prices) for r in records if not r.cached),
    )
    metrics.JUDGE_COST_USD.labels("judge").inc(spend.cost_usd)
    refused = next((r.not_graded_reason for r in records if r.refused), None)
    return spend, refused
