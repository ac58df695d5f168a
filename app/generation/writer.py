"""The one place that calls the model to generate test cases: a plan, then a case per slot.

Calls go through the judge's ModelCaller (its timeout, retries, and reasons for an outage or a
refused key); what the model answers is read and validated in app/generation/candidates.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import msgspec

from agentlasso.domain.case_drafts import Candidate, Slot
from agentlasso.domain.judging import Usage
from agentlasso.generation.candidates import PlannedSlot, read_candidate, read_plan
from agentlasso.generation.prompts import (
    CASE_TOOL_NAME,
    PLAN_TOOL_NAME,
    GenerationInput,
    case_params,
    plan_params,
)
from agentlasso.judge.model_calls import Failure, JudgeSettings, ModelCaller, Reply, Tally
from agentlasso.retry_policy import Sleep

Answer = TypeVar("Answer")


class Asked(msgspec.Struct, Generic[Answer], frozen=True, kw_only=True):
    """One question's answer (or why there is none: a str from the reader, a Failure from the
    call), with the model that answered and what the attempts cost."""

    answer: Answer | str | Failure
    model: str
    usage: Usage
    calls: int


class CaseWriter:
    """Asks the model for a plan and for cases; one per generation request."""

    def __init__(self, settings: JudgeSettings, sleep: Sleep = asyncio.sleep) -> None:
        self._settings = settings
        self._caller = ModelCaller(settings, sleep, who="the model", use="generation")

    @property
    def model(self) -> str:
        """The model this writer asks."""
        return self._settings.model

    async def plan(self, source: GenerationInput, count: int) -> Asked[list[PlannedSlot]]:
        """The model's plan of `count` slots; an unusable one is asked for once more."""
        forced_tool = self._caller.forced_tool
        params = plan_params(
            source,
            count,
            model=self._settings.model,
            max_tokens=self._settings.max_tokens,
            forced_tool=forced_tool,
        )

        def read(reply: Reply) -> list[PlannedSlot] | str:
            return read_plan(reply.output, forced_tool=forced_tool)

        def usable(answer: list[PlannedSlot] | str) -> bool:
            return not isinstance(answer, str)

        return await self._ask(params, PLAN_TOOL_NAME, read, usable)

    async def write(self, source: GenerationInput, slot: Slot) -> Asked[Candidate]:
        """One candidate for the slot, or why there is none. An invalid candidate is not asked
        for again here: the caller regenerates empty slots, a bounded number of times."""
        forced_tool = self._caller.forced_tool
        params = case_params(
            source,
            slot,
            model=self._settings.model,
            max_tokens=self._settings.max_tokens,
            forced_tool=forced_tool,
        )

        def read(reply: Reply) -> Candidate | str:
            return read_candidate(reply.output, slot, source.profile, forced_tool=forced_tool)

        return await self._ask(params, CASE_TOOL_NAME, read, lambda _: True)

    async def _ask(
        self,
        params: dict[str, Any],
        tool_name: str,
        read: Callable[[Reply], Answer | str],
        usable: Callable[[Answer | str], bool],
    ) -> Asked[Answer]:
        """One question to the model, with what it took."""
        tally = Tally(self._settings.model)
        answer = await self._caller.ask(params, tool_name, tally, read, usable)
        return Asked(answer=answer, model=tally.model, usage=tally.usage, calls=tally.attempts)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._caller.aclose()
