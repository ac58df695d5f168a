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
from agentlasso.db.pool import Connection
from agentlasso.domain.conversations import MAX_SCRIPTED_TURNS
from agentlasso.domain.grades import JudgeVerdict
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.trace_rules import Candidate, TraceRule, budget_spent_reason, chosen
from agentlasso.grading import verdicts_needed
from agentlasso.grading.by_kind import grade_answer
from agentlasso.grading.judge_checks import JudgeRequest
from agentlasso.judge.calls import RunJudging
from agentlasso.judge.judging import NO_JUDGE
from agentlasso.judge.pricing import cost_usd
from agentlasso.observability import metrics
from agentlasso.services.grading_pool import batch_budget_s, grade_off_loop
from agentlasso.services.trace_answers import RuleAnswer, conversation_answer, trace_answer
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
        picked = await _whole_conversations(connection, rule, picked, settle_s)
        moved = (quiet[-1].updated_at, quiet[-1].trace_id) if quiet else None
        traces = await db.claim(connection, rule, picked, moved, RECLAIM_AFTER_S)
    return rule, traces, len(quiet) == CLAIM_LIMIT


async def _whole_conversations(
    connection: Connection, rule: TraceRule, picked: list[Candidate], settle_s: float
) -> list[Candidate]:
    """A turn of a conversation stands for the whole conversation: claimed as its latest trace,
    versioned by the spans of all its traces, once all of it is quiet. A conversation whose
    latest turn is not quiet yet is claimed when that turn goes quiet (and the mark reaches it)."""
    ids = sorted({c.conversation_id for c in picked if c.conversation_id is not None})
    if not ids:
        return picked
    heads = await db.conversation_heads(connection, rule.project_id, ids, settle_s)
    claimed: dict[str, Candidate] = {}
    for candidate in picked:
        head = None if candidate.conversation_id is None else heads.get(candidate.conversation_id)
        if candidate.conversation_id is None:
            claimed[candidate.trace_id] = candidate
        elif head is not None and head[2]:
            latest, span_count, _ = head
            claimed[latest] = msgspec.structs.replace(
                candidate, trace_id=latest, span_count=span_count
            )
    return list(claimed.values())


async def _grade(state: WorkerState, rule: TraceRule, claimed: list[tuple[str, int]]) -> None:
    """Grade the claimed traces (or the conversations they end) and store their grades."""
    began = time.perf_counter()
    answers = await _answers(state, rule, claimed)
    verdicts = await _verdicts(state, rule, answers)
    budget_s = batch_budget_s(state.settings.grading_budget_s, len(answers))
    grades = await grade_off_loop(
        lambda out_of_time: [
            _graded(answer, verdicts.get(answer.trace_id, ({}, 0.0)), out_of_time)
            for answer in answers
        ],
        budget_s,
    )
    await db.store_grades(state.pool, rule.id, grades)
    for graded in grades:
        metrics.RULE_TRACES_GRADED.labels(graded.result.outcome).inc()
    metrics.RULE_GRADING_SECONDS.observe(time.perf_counter() - began)


async def _answers(
    state: WorkerState, rule: TraceRule, claimed: list[tuple[str, int]]
) -> list[RuleAnswer]:
    """What each claim grades: its trace, or the conversation it is the latest turn of (those
    the project no longer keeps are left out)."""
    found = await db.traces_to_grade(state.pool, rule.project_id, [t for t, _ in claimed])
    answers = []
    for trace_id, span_count in claimed:
        trace = found.get(trace_id)
        if trace is None:
            continue
        if trace.conversation_id is None:
            answers.append(trace_answer(rule, trace, span_count))
            continue
        turns = await db.conversation_turns(
            state.pool, rule.project_id, trace.conversation_id, MAX_SCRIPTED_TURNS
        )
        answers.append(conversation_answer(rule, turns or [trace], span_count))
    return answers


Verdicts = tuple[dict[str, JudgeVerdict], float]


def _graded(answer: RuleAnswer, judged: Verdicts, out_of_time: Callable[[], bool]) -> db.Graded:
    verdicts, cost = judged
    result = grade_answer(answer.content, answer.answer, verdicts, out_of_time)
    return db.Graded(
        trace_id=answer.trace_id, span_count=answer.span_count, result=result,
        trace_error=answer.trace_error, duration_ms=answer.duration_ms, judge_cost_usd=cost,
    )  # fmt: skip


async def _verdicts(
    state: WorkerState, rule: TraceRule, answers: list[RuleAnswer]
) -> dict[str, Verdicts]:
    """The judge's verdicts each answer needs, and what they cost, within the rule's budget."""
    needing = [
        (answer, requests)
        for answer in answers
        if (requests := verdicts_needed(answer.content, answer.answer))
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

    async def judge_one(
        answer: RuleAnswer, requests: Sequence[JudgeRequest]
    ) -> tuple[str, Verdicts]:
        async with slots:
            return answer.trace_id, await _judge_answer(state, rule, answer, requests, judging)

    pairs = await asyncio.gather(*(judge_one(answer, requests) for answer, requests in needing))
    return dict(pairs)


async def _judge_answer(
    state: WorkerState,
    rule: TraceRule,
    answer: RuleAnswer,
    requests: Sequence[JudgeRequest],
    judging: RunJudging,
) -> Verdicts:
    """One answer's verdicts: each judge check not graded once the day's budget is spent."""
    content, observation = answer.content, answer.observation()
    verdicts: dict[str, JudgeVerdict] = {}
    spent = 0.0
    for request in requests:
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
