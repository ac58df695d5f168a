"""A generation's model calls: the plan, a case per slot, each candidate validated and compared
with what the dataset holds, empty slots asked for again; what it all cost.

Imported on first use (it loads the model SDK, some 77 MB an API process otherwise saves).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.coordination.server_spend import seconds_to_next_day
from agentlasso.db import case_drafts as draft_rows
from agentlasso.domain.case_drafts import AgentProfile, Candidate, Discarded, GenerationRecord, Slot
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.judging import Usage
from agentlasso.errors import Conflict, TooManyRequests, Unavailable
from agentlasso.generation.candidates import balanced_slots
from agentlasso.generation.near_duplicates import SeenInputs, input_text
from agentlasso.generation.prompts import GENERATION_PROMPT_VERSION, GenerationInput
from agentlasso.generation.writer import Asked, CaseWriter
from agentlasso.judge.calls import priced_usd
from agentlasso.judge.keys import JudgeClients
from agentlasso.judge.model_calls import Failure
from agentlasso.judge.pricing import cost_usd
from agentlasso.observability import metrics
from agentlasso.services.platform import Platform
from agentlasso.services.test_cases import content_problems

NO_MODEL_KEY = (
    "No model is configured to generate cases: set the project's Anthropic API key under "
    "Settings, AI judge (or the server's ANTHROPIC_API_KEY)."
)
# An empty slot is asked for again at most this many times.
MAX_REGENERATIONS = 2
# The dataset's newest cases (and pending drafts) a new case is compared with.
COMPARED_CASES = 2_000


async def open_generation(
    platform: Platform, writer: CaseWriter, dataset: Dataset, profile: AgentProfile,
    instruction: str | None, billed_to: UUID | None = None,
) -> GenerationRun:  # fmt: skip
    """A generation for the dataset, written by `writer` (writer_for); `billed_to`: the project
    whose daily budget on the server's key pays for its calls (None: its own key does)."""
    inputs = await draft_rows.seen_inputs(platform.pool, dataset.id, COMPARED_CASES)
    seen = [input_text(value) for value in inputs]
    source = GenerationInput(
        profile=profile,
        instruction=instruction,
        data_context=dataset.data_context,
        existing_inputs=tuple(seen),
    )
    # Off the event loop: a few thousand long inputs take a second or two to index.
    seen_inputs = await asyncio.to_thread(SeenInputs, seen)
    return GenerationRun(platform, writer, source, seen_inputs, billed_to)


async def writer_for(platform: Platform, project_id: UUID) -> tuple[CaseWriter, bool]:
    """The writer, with the project's key and model (else the server's: then True, and
    TooManyRequests when the server's budget for the project today is spent); Conflict if
    neither has a key."""
    clients = JudgeClients(platform.settings, platform.pool, platform.secret_key)
    chosen = await clients.settings_for(project_id)
    if chosen is None:
        raise Conflict(NO_MODEL_KEY)
    server_key = await clients.uses_server_key(project_id)
    if server_key:
        reason = await platform.server_spend.spent_reason(project_id)
        if reason is not None:
            retry_after_s = seconds_to_next_day(time.time())
            raise TooManyRequests(f"No case can be generated: {reason}.", retry_after_s)
    max_tokens = platform.settings.generation_max_tokens
    return CaseWriter(msgspec.structs.replace(chosen, max_tokens=max_tokens)), server_key


class GenerationRun:
    """One generation's model calls: the plan, the slots, what they cost, what was dropped."""

    def __init__(
        self, platform: Platform, writer: CaseWriter, source: GenerationInput, seen: SeenInputs,
        billed_to: UUID | None = None,
    ) -> None:  # fmt: skip
        self._writer = writer
        self._source = source
        self._seen = seen
        self._limit = asyncio.Semaphore(max(1, platform.settings.generation_concurrency))
        self._prices = platform.settings.judge_prices
        self._started = time.perf_counter()
        self._slots: list[Slot] = []
        self._filled: dict[int, Candidate] = {}
        self._failure: str | None = None
        self._auth_failed = False
        self._spend = platform.server_spend
        self._billed_to = billed_to
        self.model = writer.model
        self.usage = Usage()
        self.calls = 0
        self.discarded: list[Discarded] = []

    async def run(self, count: int, deadline_s: float) -> bool:
        """Plan and fill `count` slots; True when the deadline cut it short."""
        try:
            async with asyncio.timeout(deadline_s):
                await self._fill(await self._plan(count))
        except TimeoutError:
            self._failure = self._failure or f"the model did not finish within {deadline_s:g} s"
            return True
        return False

    async def run_slots(self, slots: list[Slot], deadline_s: float) -> None:
        """Fill these slots (a regeneration), within the deadline."""
        try:
            async with asyncio.timeout(deadline_s):
                await self._fill(slots)
        except TimeoutError:
            self._failure = self._failure or f"the model did not finish within {deadline_s:g} s"

    async def aclose(self) -> None:
        """Close the model client's connections."""
        await self._writer.aclose()

    def candidates(self) -> list[Candidate]:
        """The valid candidates, in the plan's order."""
        return [self._filled[index] for index in sorted(self._filled)]

    def record(
        self, dataset_id: UUID, agent_id: UUID | None, instruction: str | None, requested: int
    ) -> GenerationRecord:
        """The generation as it is stored, with its usage and cost."""
        try:
            cost: float | None = cost_usd(self.usage, self.model, self._prices)
        except KeyError:
            cost = None  # a model this server has no price for: tokens are still counted
        metrics.JUDGE_COST_USD.labels("generation").inc(cost or 0.0)
        return GenerationRecord(
            id=uuid.uuid4(), dataset_id=dataset_id, agent_id=agent_id,
            profile=self._source.profile, instruction=instruction, requested=requested,
            model=self.model, prompt_version=GENERATION_PROMPT_VERSION, usage=self.usage,
            cost_usd=cost, calls=self.calls,
            latency_ms=round((time.perf_counter() - self._started) * 1000),
        )  # fmt: skip

    def raise_failure(self) -> None:
        """No draft came of it: say why when the model itself failed (else it just found none
        valid, which the caller reports with what was dropped)."""
        if self._failure is not None:
            raise self._error(self._failure)

    def _error(self, failure: str) -> Conflict | Unavailable:
        if self._auth_failed:
            return Conflict(f"The model could not be used: {failure}.")
        return Unavailable(f"No case could be generated: {failure}.", retry_after_s=30)

    async def _plan(self, count: int) -> list[Slot]:
        asked = await self._writer.plan(self._source, count)
        await self._count(asked)
        if isinstance(asked.answer, Failure):
            self._failed(asked.answer)
            raise self._error(asked.answer.reason)
        planned = [] if isinstance(asked.answer, str) else asked.answer
        self._slots = balanced_slots(planned, count, self._source.profile)
        return self._slots

    async def _fill(self, slots: list[Slot]) -> None:
        """Fill every slot; an empty one is asked for again, at most MAX_REGENERATIONS times."""
        self._slots = slots
        for _ in range(1 + MAX_REGENERATIONS):
            empty = [index for index in range(len(slots)) if index not in self._filled]
            if not empty or self._auth_failed:
                return
            await asyncio.gather(*(self._write(index) for index in empty))

    async def _write(self, index: int) -> None:
        slot = self._slots[index]
        async with self._limit:
            if self._auth_failed or await self._budget_spent():
                return
            asked = await self._writer.write(self._source, slot)
        await self._count(asked)
        answer = asked.answer
        if isinstance(answer, Failure):
            self._failed(answer)
            return
        problem = answer if isinstance(answer, str) else self._problem(answer)
        if problem is not None:
            self.discarded.append(Discarded(category=slot.category, reason=problem))
            return
        assert isinstance(answer, Candidate)
        # No await between the check and the add: concurrent slots cannot both pass it.
        self._seen.add(input_text(answer.content.input or ""))
        self._filled[index] = answer

    def _problem(self, candidate: Candidate) -> str | None:
        """Why a candidate that parsed still cannot become a draft, or None."""
        problems = content_problems(candidate.content)
        if problems:
            return f"its checks are not valid: {problems[0].detail}"
        repeated = self._seen.resembled(input_text(candidate.content.input or ""))
        if repeated is not None:
            return f"it nearly repeats an existing case: {repeated[:120]!r}"
        return None

    async def _count(self, asked: Asked[Any]) -> None:
        self.usage = self.usage.plus(asked.usage)
        self.calls += asked.calls
        self.model = asked.model
        if self._billed_to is not None:
            cost = priced_usd(asked.usage, asked.model, self._writer.model, self._prices)
            await self._spend.add(self._billed_to, cost)

    async def _budget_spent(self) -> bool:
        """Whether the server's budget for the project ran out during the generation (it then
        stops, saying so)."""
        if self._billed_to is None:
            return False
        reason = await self._spend.spent_reason(self._billed_to)
        if reason is not None:
            self._failure = self._failure or reason
        return reason is not None

    def _failed(self, failure: Failure) -> None:
        self._failure = failure.reason
        self._auth_failed = self._auth_failed or failure.auth_failed
