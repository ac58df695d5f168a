"""Generating test cases: plan the coverage, write a case per slot, keep the valid and new ones
as drafts for review (contract section 11). Nothing here adds a case to the dataset.

The model is the judge's: the project's own key and model, else the server's. The whole
request is bounded by `generation_deadline_s`; what was valid by then is kept. The model calls
themselves are in app/services/case_writing.py.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any
from uuid import UUID

import msgspec
from redis.exceptions import RedisError

from agentlasso.agent_wire.a2a_card import A2aCard, card_prompt_and_tools
from agentlasso.db import agents as agent_rows
from agentlasso.db import case_drafts as draft_rows
from agentlasso.db import datasets as dataset_rows
from agentlasso.domain.agents import Agent
from agentlasso.domain.case_drafts import (
    AgentProfile,
    Candidate,
    CaseDraft,
    Discarded,
    GenerationRecord,
    ToolSpec,
)
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.stored_text import refuse_nul
from agentlasso.errors import Conflict, FieldError, InvalidInput, NotFound, TooManyRequests
from agentlasso.services.case_drafts import draft_or_missing, draft_rows_of, pending_or_conflict
from agentlasso.services.platform import Platform

if TYPE_CHECKING:
    from agentlasso.services.case_writing import GenerationRun

log = logging.getLogger("agentlasso.generation")

NO_PROFILE = (
    "Nothing to generate cases from: give the agent's system_prompt or tools, or register an "
    "agent that has them."
)


class GenerationAsk(msgspec.Struct, frozen=True, kw_only=True):
    """What a person asks a generation for."""

    agent_id: UUID | None = None
    system_prompt: str | None = None
    tools: tuple[ToolSpec, ...] | None = None
    instruction: str | None = None
    count: int = 10


class Generated(msgspec.Struct, frozen=True, kw_only=True):
    """A finished generation: its drafts, what it cost, what was dropped."""

    generation: GenerationRecord
    drafts: list[CaseDraft]
    discarded: list[Discarded]
    # The deadline came first: the drafts are those valid by then.
    timed_out: bool = False


async def generate_cases(
    platform: Platform, project_id: UUID, dataset_id: UUID, ask: GenerationAsk
) -> Generated:
    """Ask the model for `ask.count` candidate cases; store the valid ones as pending drafts."""
    refuse_nul(msgspec.structs.asdict(ask))  # the ask is stored with the generation
    dataset = await dataset_rows.get_dataset(platform.pool, project_id, dataset_id)
    if dataset is None:
        raise NotFound("No dataset with this id in your project.")
    profile = await _profile(platform, project_id, ask)
    generation = await _open(platform, project_id, dataset, profile.profile, ask.instruction)
    try:
        timed_out = await generation.run(ask.count, platform.settings.generation_deadline_s)
    finally:
        await generation.aclose()
    record = generation.record(dataset_id, profile.agent_id, ask.instruction, ask.count)
    drafts = await _store(platform, project_id, record, generation.candidates())
    if not drafts:
        generation.raise_failure()
    return Generated(
        generation=record, drafts=drafts, discarded=generation.discarded, timed_out=timed_out
    )


async def regenerate_draft(
    platform: Platform, project_id: UUID, dataset_id: UUID, draft_id: UUID
) -> tuple[CaseDraft, GenerationRecord]:
    """A new draft for the same slot; the old one is rejected and points at its replacement."""
    old = pending_or_conflict(await draft_or_missing(platform, project_id, dataset_id, draft_id))
    first = await draft_rows.get_generation(platform.pool, project_id, old.generation_id)
    dataset = await dataset_rows.get_dataset(platform.pool, project_id, dataset_id)
    assert first is not None, "a draft's generation exists"
    if dataset is None:  # deleted since the draft was read
        raise NotFound("No dataset with this id in your project.")
    generation = await _open(platform, project_id, dataset, first.profile, first.instruction)
    try:
        await generation.run_slots([old.slot], platform.settings.generation_deadline_s)
    finally:
        await generation.aclose()
    record = generation.record(dataset_id, first.agent_id, first.instruction, 1)
    drafts = await _store(platform, project_id, record, generation.candidates(), replacing=old)
    if not drafts:
        generation.raise_failure()
        raise Conflict(_nothing_usable(generation.discarded))
    return drafts[0], record


def _nothing_usable(discarded: list[Discarded]) -> str:
    """Why a regeneration left the draft as it was: the model's candidates were all dropped."""
    reasons = "; ".join(dict.fromkeys(item.reason for item in discarded)) or "none was written"
    return (
        f"No usable replacement was written ({reasons}). The draft is unchanged: regenerate it "
        "again, or edit it as you accept it."
    )


async def _open(
    platform: Platform, project_id: UUID, dataset: Dataset, profile: AgentProfile,
    instruction: str | None,
) -> GenerationRun:  # fmt: skip
    """A generation with the project's model (Conflict when it has none), counted against its
    quota before the dataset's inputs are read and indexed for it."""
    # Loaded on first use: the model SDK costs an API process some 77 MB.
    from agentlasso.services.case_writing import open_generation, writer_for

    writer, server_key = await writer_for(platform, project_id)
    try:
        await _take_turn(platform, project_id)
        billed_to = project_id if server_key else None
        return await open_generation(platform, writer, dataset, profile, instruction, billed_to)
    except BaseException:
        await writer.aclose()
        raise


async def _take_turn(platform: Platform, project_id: UUID) -> None:
    """Count a generation against the project's quota; TooManyRequests past it."""
    try:
        wait_s = await platform.generation_limiter.take(str(project_id))
    except (RedisError, OSError):
        # Redis away: generations go on unlimited rather than all refused, as requests do.
        log.warning("the generation quota is not applied: Redis did not answer", exc_info=True)
        return
    if wait_s > 0:
        per_min = platform.settings.quota_generations_per_min
        retry_after_s = max(1, math.ceil(wait_s))
        generations = "generation" if per_min == 1 else "generations"
        raise TooManyRequests(
            f"Your project may start {per_min} case {generations} a minute; try again in "
            f"{retry_after_s} s.",
            retry_after_s=retry_after_s,
        )


class _Profile(msgspec.Struct, frozen=True):
    profile: AgentProfile
    agent_id: UUID | None


async def _profile(platform: Platform, project_id: UUID, ask: GenerationAsk) -> _Profile:
    """The prompt and tools to generate from: those given, else the agent's (the one named,
    else the project's default when neither prompt nor tools were given)."""
    agent: Agent | None = None
    if ask.agent_id is not None:
        agent = await agent_rows.get_agent(platform.pool, project_id, ask.agent_id)
        if agent is None:
            detail = "No agent with this id in your project."
            raise NotFound(detail, [FieldError(pointer="/agent_id", detail=detail)])
    elif ask.system_prompt is None and ask.tools is None:
        agent = await agent_rows.default_agent(platform.pool, project_id)
    card_prompt, card_tools = _from_card(agent)
    system_prompt = ask.system_prompt
    if system_prompt is None and agent is not None:
        system_prompt = agent.system_prompt or card_prompt
    tools = ask.tools
    if tools is None:
        tools = _agent_tools((agent.tools if agent is not None else None) or card_tools)
    if not (system_prompt or "").strip() and not tools:
        raise InvalidInput(NO_PROFILE, [FieldError(pointer="/system_prompt", detail=NO_PROFILE)])
    profile = AgentProfile(system_prompt=system_prompt, tools=tools)
    return _Profile(profile, None if agent is None else agent.id)


def _from_card(agent: Agent | None) -> tuple[str | None, list[dict[str, Any]] | None]:
    """What an A2A agent's card says of its prompt and tools (its description and skills),
    for an agent registered without them: often the card is all there is."""
    if agent is None or agent.a2a_card is None:
        return None, None
    prompt, tools = card_prompt_and_tools(msgspec.convert(agent.a2a_card, A2aCard))
    return prompt, tools


def _agent_tools(tools: list[dict[str, Any]] | None) -> tuple[ToolSpec, ...]:
    """A registered agent's tools (stored as given): those with a name, as ToolSpecs."""
    specs: list[ToolSpec] = []
    for tool in tools or []:
        name = tool.get("name")
        if isinstance(name, str) and name:
            description = tool.get("description")
            schema = tool.get("input_schema")
            specs.append(ToolSpec(
                name=name,
                description=description if isinstance(description, str) else None,
                input_schema=schema if isinstance(schema, dict) else None,
            ))  # fmt: skip
    return tuple(specs)


async def _store(
    platform: Platform, project_id: UUID, record: GenerationRecord, candidates: list[Candidate],
    *, replacing: CaseDraft | None = None,
) -> list[CaseDraft]:  # fmt: skip
    """Store the generation and its drafts (and reject the draft they replace) at once."""
    rows = draft_rows_of(project_id, record, candidates)
    async with platform.pool.acquire() as connection, connection.transaction():
        await draft_rows.insert_generation(connection, project_id, record)
        if rows:
            await draft_rows.insert_drafts(connection, rows)
        if replacing is not None and rows:
            replaced = await draft_rows.decide(
                connection, project_id, replacing.id, "rejected", replaced_by=rows[0][0]
            )
            if not replaced:
                raise Conflict("This draft was accepted or rejected meanwhile.")
        drafts = [
            await draft_rows.get_draft(connection, project_id, record.dataset_id, row[0])
            for row in rows
        ]
    return [draft for draft in drafts if draft is not None]
