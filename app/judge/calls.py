"""Asking the AI judge for a check's verdict: the cache, the shared limit, repeats near a floor.

Only workers import this module (it loads the model SDK); the API decides without it.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

import msgspec

from agentlasso.config import Settings
from agentlasso.domain.grades import JudgeVerdict, Observation
from agentlasso.domain.judging import CachedAnswer, JudgeRecord, Usage
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading.judge_checks import JudgeRequest, reaches
from agentlasso.judge.client import JudgeAnswer, JudgeClient
from agentlasso.judge.inputs import shown_to_judge, with_cut_note
from agentlasso.judge.judging import NO_JUDGE
from agentlasso.judge.pricing import cost_usd
from agentlasso.judge.prompts import JudgeQuestion, cache_key

if TYPE_CHECKING:
    from agentlasso.coordination.server_spend import ServerKeySpend


class RunJudging(msgspec.Struct, kw_only=True):
    """What judging a run needs to know and remember while a chunk is judged."""

    project_id: UUID
    # The project's judge (its own key and model, or the server's); None: no judge at all.
    client: JudgeClient | None
    use_cache: bool
    stopped: str | None
    # The client is the server's key (the project has none of its own): its spend is counted
    # against the server's daily budget for the project.
    server_key: bool = False


class VerdictCache(Protocol):
    """Where verdicts of identical requests are kept."""

    async def get(self, key: str) -> CachedAnswer | None: ...

    async def put(self, key: str, project_id: UUID, answer: CachedAnswer) -> None: ...


# Holds one of the judge calls allowed at once (across every worker, and for the project) while
# the block runs.
JudgeSlot = Callable[[UUID], AbstractAsyncContextManager[None]]


class Judge:
    """Asks the judge for one check's verdict, through the cache and the shared limit."""

    def __init__(
        self,
        settings: Settings,
        cache: VerdictCache,
        slot: JudgeSlot,
        server_spend: ServerKeySpend | None = None,
    ) -> None:
        self.settings = settings
        self.cache = cache
        self.slot = slot
        self.server_spend = server_spend

    async def verdict(
        self,
        request: JudgeRequest,
        content: TestCaseContent,
        observation: Observation,
        context: dict[str, Any] | None,
        run: RunJudging,
    ) -> tuple[JudgeVerdict, JudgeRecord]:
        """The verdict and its record (`refused` when the judge's key was refused)."""
        client = run.client
        if run.stopped is not None or client is None:
            verdict = JudgeVerdict.unavailable(run.stopped or NO_JUDGE)
            return verdict, _record(request.check_id, self.settings.judge_model, verdict)
        model = client.model
        question, cut = shown_to_judge(
            request, content, observation, context, self.settings.judge_max_input_chars
        )
        key = cache_key(
            question, model, project_id=run.project_id, min_confidence=content.min_confidence
        )
        if run.use_cache:
            cached = await self.cache.get(key)
            if cached is not None:
                record = _record(request.check_id, cached.model, cached.verdict, cached=True)
                return cached.verdict, record
        answers = await self._answers(client, question, request, content, run)
        verdict, record = _combine(request.check_id, answers, content.min_confidence)
        verdict = with_cut_note(verdict, cut)
        if verdict.not_graded_reason is None:
            await self.cache.put(key, run.project_id, CachedAnswer(verdict, record.model))
        refused = any(answer.auth_failed for answer in answers)
        return verdict, msgspec.structs.replace(
            record, reasoning=verdict.reasoning, refused=refused, truncated=tuple(cut)
        )

    async def _server_budget_spent(self, run: RunJudging) -> str | None:
        """Why the server's key may not judge for the project today; None when it may (or the
        project pays with its own key)."""
        if not run.server_key or self.server_spend is None:
            return None
        return await self.server_spend.spent_reason(run.project_id)

    async def _count_server_spend(
        self, run: RunJudging, asked_model: str, answer: JudgeAnswer
    ) -> None:
        if run.server_key and self.server_spend is not None:
            cost = priced_usd(answer.usage, answer.model, asked_model, self.settings.judge_prices)
            await self.server_spend.add(run.project_id, cost)

    async def _answers(
        self,
        client: JudgeClient,
        question: JudgeQuestion,
        request: JudgeRequest,
        content: TestCaseContent,
        run: RunJudging,
    ) -> list[JudgeAnswer]:
        """One answer, or up to `judge_repeats` when a SCORE lands near its floor."""
        answers = [await self._ask(client, question, run)]
        first = answers[0].verdict
        if not self._near_floor(request, first, content.min_confidence):
            return answers
        repeats = self.settings.judge_repeats - 1
        answers += await asyncio.gather(*(self._ask(client, question, run) for _ in range(repeats)))
        return answers

    async def _ask(
        self, client: JudgeClient, question: JudgeQuestion, run: RunJudging
    ) -> JudgeAnswer:
        async with self.slot(run.project_id):
            # Looked at while holding the slot: the calls before have counted what they cost.
            spent = await self._server_budget_spent(run)
            if spent is not None:
                return JudgeAnswer(JudgeVerdict.unavailable(spent), client.model, Usage(), 0, 0)
            answer = await client.judge(question)
            await self._count_server_spend(run, client.model, answer)
            return answer

    def _near_floor(self, request: JudgeRequest, verdict: JudgeVerdict, floor: int) -> bool:
        if request.evaluation_type != "SCORE" or request.kind != "expectation":
            return False
        if verdict.score is None or self.settings.judge_repeats <= 1:
            return False
        return abs(verdict.score * 100 - floor) <= self.settings.judge_repeat_margin


def _combine(
    check_id: str, answers: Sequence[JudgeAnswer], floor: int
) -> tuple[JudgeVerdict, JudgeRecord]:
    """One answer as it is; repeated SCORE answers as their median, flaky when they disagree."""
    usage = _sum_usage([answer.usage for answer in answers])
    latency_ms = sum(answer.latency_ms for answer in answers)
    calls = sum(answer.attempts for answer in answers)
    scores = [a.verdict.score for a in answers if a.verdict.score is not None]
    first = answers[0]
    if len(answers) == 1 or len(scores) < 2:
        record = _record(check_id, first.model, first.verdict)
        return first.verdict, msgspec.structs.replace(
            record, usage=usage, latency_ms=latency_ms, calls=calls
        )
    median = statistics.median(scores)
    flaky = len({reaches(score, floor) for score in scores}) > 1
    reasoning = next(
        (a.verdict.reasoning for a in answers if a.verdict.score == median), first.verdict.reasoning
    )
    verdict = JudgeVerdict.scored(median, reasoning=reasoning, model=first.model)
    record = msgspec.structs.replace(
        _record(check_id, first.model, verdict),
        usage=usage, latency_ms=latency_ms, calls=calls, samples=tuple(scores), flaky=flaky,
    )  # fmt: skip
    return verdict, record


def _record(check_id: str, model: str, verdict: JudgeVerdict, cached: bool = False) -> JudgeRecord:
    return JudgeRecord(
        check_id=check_id,
        model=model,
        passed=verdict.passed,
        score=verdict.score,
        reasoning=verdict.reasoning,
        not_graded_reason=verdict.not_graded_reason,
        cached=cached,
    )


def priced_usd(
    usage: Usage, model: str, asked_model: str, prices: Mapping[str, tuple[float, float]]
) -> float:
    """What a call cost: at the answering model's price, else the asked model's (an answer may
    name a model the server has no price for)."""
    try:
        return cost_usd(usage, model, prices)
    except KeyError:
        return cost_usd(usage, asked_model, prices)


def _sum_usage(usages: Sequence[Usage]) -> Usage:
    return Usage(
        input_tokens=sum(u.input_tokens for u in usages),
        output_tokens=sum(u.output_tokens for u in usages),
        cache_creation_input_tokens=sum(u.cache_creation_input_tokens for u in usages),
        cache_read_input_tokens=sum(u.cache_read_input_tokens for u in usages),
    )
