"""A worker's duty of grading production traces by the project's trace rules (section 18).

A round takes the rules one at a time, each locked only while traces are claimed for it (so
workers share the rules, and one rule's backlog between them). A claim is a row per trace and
version in `trace_evaluations`, written in the transaction that moves the rule's mark on: a
worker that dies after claiming leaves pending rows that another claims again later, and a
version graded once is never graded again. Grading happens with no lock or connection held.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from uuid import UUID

import msgspec

from agentlasso.db import trace_rules as db
from agentlasso.domain.grades import JudgeVerdict, Observation
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.domain.trace_rules import TraceRule, TraceToGrade, budget_spent_reason, chosen
from agentlasso.grading import verdicts_needed
from agentlasso.grading.by_kind import grade_answer
from agentlasso.grading.observations import observation_from_wire
from agentlasso.judge.calls import RunJudging
from agentlasso.judge.judging import NO_JUDGE
from agentlasso.judge.pricing import cost_usd
from agentlasso.observability import metrics
from agentlasso.services.grading_pool import batch_budget_s, grade_off_loop
from agentlasso.traces.cases import case_input
from agentlasso_workers.state import WorkerState

log = logging.getLogger("agentlasso.trace_rules")

# Traces looked at per rule per claim: a short transaction, and rules served in turn.
CLAIM_LIMIT = 1_000
# A claimed trace not graded within this long (its worker died) is claimed again.
RECLAIM_AFTER_S = 120.0
# Traces of one claim judged at once (the judge's own limits bound the calls further).
JUDGED_AT_ONCE = 16


async def grade_due_traces(state: WorkerState) -> None:
    """Rounds over the rules until none has traces waiting past one claim's worth."""
    while await _round(state):
        pass


async def _round(state: WorkerState) -> bool:
    """Claim and grade a batch for each rule no other worker holds; whether any had more."""
    done: list[UUID] = []
    more = False
    while True:
        claimed = await _claim_next(state, done)
        if claimed is None:
            return more
        rule, traces, full = claimed
        done.append(rule.id)
        more = more or full
        if traces:
            await _grade(state, rule, traces)


async def _claim_next(
    state: WorkerState, done: Sequence[UUID]
) -> tuple[TraceRule, list[tuple[str, int]], bool] | None:
    settle_s = state.settings.trace_settle_s
    async with state.pool.acquire() as connection, connection.transaction():
        locked = await db.lock_next_rule(connection, done)
        if locked is None:
            return None
        rule, mark = locked
        quiet = await db.quiet_traces(connection, rule, mark, settle_s, CLAIM_LIMIT)
        picked = chosen(rule, quiet)
        if picked and rule.filter.attributes:
            having = await db.with_attributes(
                connection, rule.project_id, [c.trace_id for c in picked], rule.filter.attributes
            )
            picked = [candidate for candidate in picked if candidate.trace_id in having]
        moved = (quiet[-1].updated_at, quiet[-1].trace_id) if quiet else mark
        traces = await db.claim(connection, rule, picked, moved, RECLAIM_AFTER_S)
    return rule, traces, len(quiet) == CLAIM_LIMIT


async def _grade(state: WorkerState, rule: TraceRule, claimed: list[tuple[str, int]]) -> None:
    """Grade the claimed traces and store their grades."""
    began = time.perf_counter()
    found = await db.traces_to_grade(state.pool, rule.project_id, [t for t, _ in claimed])
    present = [(found[trace_id], count) for trace_id, count in claimed if trace_id in found]
    verdicts = await _verdicts(state, rule, [trace for trace, _ in present])
    budget_s = batch_budget_s(state.settings.grading_budget_s, len(present))
    grades = await grade_off_loop(
        lambda out_of_time: [
            _graded(rule, trace, count, verdicts.get(trace.trace_id, ({}, 0.0)), out_of_time)
            for trace, count in present
        ],
        budget_s,
    )
    await db.store_grades(state.pool, rule.id, grades)
    for graded in grades:
        metrics.RULE_TRACES_GRADED.labels(graded.result.outcome).inc()
    metrics.RULE_GRADING_SECONDS.observe(time.perf_counter() - began)


def content_for(rule: TraceRule, trace: TraceToGrade) -> TestCaseContent:
    """What the trace is graded against: the rule's checks, with the trace's input as the
    case's (the judge reads it)."""
    return msgspec.structs.replace(rule.content, input=case_input(trace.input) or "")


def observation_of(trace: TraceToGrade) -> Observation:
    """What the agent did on the trace, as a case result reports it: its reply (when it
    recorded one), its tool calls and how long the trace took."""
    return observation_from_wire(
        trace.output, trace.tool_calls,
        output_reported=trace.output is not None, latency_ms=trace.duration_ms,
    )  # fmt: skip


Verdicts = tuple[dict[str, JudgeVerdict], float]


def _graded(
    rule: TraceRule,
    trace: TraceToGrade,
    span_count: int,
    judged: Verdicts,
    out_of_time: Callable[[], bool],
) -> db.Graded:
    verdicts, cost = judged
    result = grade_answer(content_for(rule, trace), observation_of(trace), verdicts, out_of_time)
    return db.Graded(
        trace_id=trace.trace_id, span_count=span_count, result=result,
        trace_error=trace.error is not None, duration_ms=trace.duration_ms, judge_cost_usd=cost,
    )  # fmt: skip


async def _verdicts(
    state: WorkerState, rule: TraceRule, traces: list[TraceToGrade]
) -> dict[str, Verdicts]:
    """The judge's verdicts each trace needs, and what they cost, within the rule's budget."""
    needing = [
        trace
        for trace in traces
        if verdicts_needed(content_for(rule, trace), observation_of(trace))
    ]
    if not needing:
        return {}
    client = await state.judge_clients.for_project(rule.project_id)
    judging = RunJudging(
        project_id=rule.project_id, client=client, use_cache=True,
        stopped=None if state.judge is not None and client is not None else NO_JUDGE,
        server_key=await state.judge_clients.uses_server_key(rule.project_id),
    )  # fmt: skip
    slots = asyncio.Semaphore(JUDGED_AT_ONCE)

    async def judge_one(trace: TraceToGrade) -> tuple[str, Verdicts]:
        async with slots:
            return trace.trace_id, await _judge_trace(state, rule, trace, judging)

    pairs = await asyncio.gather(*(judge_one(trace) for trace in needing))
    return dict(pairs)


async def _judge_trace(
    state: WorkerState, rule: TraceRule, trace: TraceToGrade, judging: RunJudging
) -> Verdicts:
    """One trace's verdicts: each judge check not graded once the day's budget is spent."""
    content, observation = content_for(rule, trace), observation_of(trace)
    verdicts: dict[str, JudgeVerdict] = {}
    spent = 0.0
    for request in verdicts_needed(content, observation):
        over = await _over_budget(state, rule)
        if over is not None or judging.stopped is not None or state.judge is None:
            verdicts[request.check_id] = JudgeVerdict.unavailable(
                over or judging.stopped or NO_JUDGE
            )
            continue
        verdict, record = await state.judge.verdict(request, content, observation, None, judging)
        if record.refused:
            judging.stopped = verdict.not_graded_reason
        cost = _cost(state, record)
        await db.add_spend(state.pool, rule.id, _today(), cost)
        metrics.JUDGE_COST_USD.labels("trace_rule").inc(cost)
        spent += cost
        verdicts[request.check_id] = verdict
    return verdicts, spent


async def _over_budget(state: WorkerState, rule: TraceRule) -> str | None:
    """Why the rule judges no more today, when its budget is spent."""
    budget = rule.daily_judge_budget_usd
    if budget is None:
        return None
    if await db.spent_on(state.pool, rule.id, _today()) >= budget:
        return budget_spent_reason(budget)
    return None


def _cost(state: WorkerState, record: JudgeRecord) -> float:
    if record.cached:
        return 0.0
    return cost_usd(record.usage, record.model, state.settings.judge_prices)


def _today() -> date:
    return datetime.now(UTC).date()
