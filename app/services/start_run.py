"""Starting a run of a dataset: in CI mode the client calls its agent, in server mode we do.

Either way the dataset's current revisions (or a version's frozen ones), only those with the
tags asked for, are pinned to the run in one statement, so editing a case later never changes
what an old run graded. A server-mode run is also cut into chunks
of agent calls, and its first lanes are queued before the answer goes out.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db import agents as agent_rows
from agentlasso.db import chunks as chunk_rows
from agentlasso.db import datasets as dataset_rows
from agentlasso.db import judge_warnings, run_gates
from agentlasso.db import pinned_cases as pinned_rows
from agentlasso.db import runs as run_rows
from agentlasso.db.pool import Connection
from agentlasso.db.runs import RunInsert
from agentlasso.domain.agents import Agent
from agentlasso.domain.datasets import Dataset, DatasetVersion
from agentlasso.domain.declared_tools import declared_tools
from agentlasso.domain.grades import DeclaredTools
from agentlasso.domain.runs import ChunkRef, Run, RunGate, lanes_for
from agentlasso.domain.stored_text import refuse_nul
from agentlasso.domain.test_cases import PinnedCase
from agentlasso.errors import Conflict, FieldError, InvalidInput, NotFound, TooManyRequests
from agentlasso.grading.written_checks import declared_tool_problems
from agentlasso.queue import enqueue_quietly
from agentlasso.services.dataset_versions import find_version
from agentlasso.services.platform import Platform

DEFAULT_CONCURRENCY = 50
BAD_BASELINE = "The baseline must be a completed run of the same dataset, in your project."


class NewRun(msgspec.Struct, frozen=True, kw_only=True):
    """What a client asks for when it starts a run; with an agent the platform calls it."""

    dataset_id: UUID
    pass_threshold: float = 1.0
    agent_id: UUID | None = None
    trials: int = 1
    concurrency: int | None = None
    labels: dict[str, str] | None = None
    # False: ask the judge afresh even when an identical request has a cached verdict.
    judge_cache: bool = True
    gate: RunGate = "threshold"
    # The run to compare with; None: chosen when the run is created (see choose_baseline).
    baseline_run_id: UUID | None = None
    # Only the cases with one of these tags; None: every case.
    tags: tuple[str, ...] | None = None
    # The dataset version to run (its id or name); None: the cases' current revisions.
    dataset_version: str | None = None
    # CI mode: the agent's tools as it declares them (tool_args_valid validates against their
    # input schemas); a server-mode run takes its agent's.
    tools: list[dict[str, Any]] | None = None


class StartedRun(msgspec.Struct, frozen=True, kw_only=True):
    """A run as created (or found again through its idempotency key), with its dataset."""

    run: Run
    dataset: Dataset
    # True when the idempotency key had already created this run.
    replayed: bool


# Fields a run request gained later: counted only when given, so a retry across the upgrade
# that added them is still the same request.
_LATER_FIELDS = ("tags", "dataset_version", "tools")


def request_hash(request: NewRun) -> bytes:
    """A fingerprint of the request, to tell a retry from another request with the same key."""
    fields = msgspec.structs.asdict(request)
    for name in _LATER_FIELDS:
        if fields[name] is None:
            del fields[name]
    return hashlib.sha256(msgspec.json.encode(fields)).digest()


def chunking(total: int, concurrency: int) -> tuple[int, int, int]:
    """(chunk size, chunk count, lanes): lanes x chunk size is the run's concurrency, rounded
    down to a multiple of the lanes (120 is 3 lanes of 40, never 3 of 50)."""
    concurrency = max(1, concurrency)
    lanes = lanes_for(concurrency)
    size = concurrency // lanes
    count = math.ceil(total / size)
    return size, count, min(count, lanes)


async def start_run(
    platform: Platform,
    project_id: UUID,
    request: NewRun,
    idempotency_key: str | None,
    failed_in: UUID | None = None,
) -> StartedRun:
    """Create the run; a server-mode run's first lanes are queued, no agent call awaited.
    With `failed_in` (server mode), only the cases that failed in that run of the dataset."""
    refuse_nul({"labels": request.labels, "dataset_version": request.dataset_version})
    if request.agent_id is not None and request.tools is not None:
        detail = "A run that calls your agent validates its tool calls against the agent's tools."
        raise InvalidInput(detail, [FieldError(pointer="/tools", detail=detail)])
    if request.agent_id is None:
        assert failed_in is None, "a re-run of failed cases calls the agent: server mode"
        return await _start_ci_run(platform, project_id, request, idempotency_key)
    return await _start_server_run(platform, project_id, request, idempotency_key, failed_in)


async def pinned_cases(platform: Platform, run_id: UUID, page: int) -> AsyncIterator[PinnedCase]:
    """The run's cases at their pinned revisions, in dataset order, fetched `page` at a time
    with a connection held for each page's query only (a client may read the list slowly)."""
    after = 0
    while cases := await pinned_rows.pinned_page(platform.pool, run_id, after, page):
        for case in cases:
            yield case
        after = cases[-1].position


async def _start_ci_run(
    platform: Platform, project_id: UUID, request: NewRun, idempotency_key: str | None
) -> StartedRun:
    if request.trials != 1:
        # A CI client posts one result per case: a run waiting for more could never complete.
        detail = "trials are for runs where the platform calls the agent (with agent_id)."
        raise InvalidInput(detail, [FieldError(pointer="/trials", detail=detail)])
    _refuse_unusable_tools(request.tools)
    async with platform.pool.acquire() as connection, connection.transaction():
        dataset = await _dataset_to_run(connection, project_id, request.dataset_id)
        version = await _version_to_run(connection, request)
        baseline = await _baseline(connection, project_id, request)
        values = _insert_values(
            project_id, request, idempotency_key, concurrency=None, baseline=baseline,
            version=version, tools=declared_tools(request.tools),
        )  # fmt: skip
        run = await run_rows.insert_run(connection, values)
        if run is None:
            return await _replay(connection, project_id, idempotency_key, request, dataset)
        run = await _pin(connection, run, request, version)
        run = await run_gates.store_gate(connection, run)
    return StartedRun(run=run, dataset=dataset, replayed=False)


async def _start_server_run(
    platform: Platform,
    project_id: UUID,
    request: NewRun,
    idempotency_key: str | None,
    failed_in: UUID | None,
) -> StartedRun:
    _check_concurrency(platform, request)
    async with platform.pool.acquire() as connection, connection.transaction():
        dataset = await _dataset_to_run(connection, project_id, request.dataset_id)
        version = await _version_to_run(connection, request)
        agent = await _agent_to_call(connection, project_id, request.agent_id)
        concurrency = request.concurrency or min(
            DEFAULT_CONCURRENCY, agent.max_concurrency or DEFAULT_CONCURRENCY
        )
        baseline = await _baseline(connection, project_id, request)
        values = _insert_values(
            project_id, request, idempotency_key, concurrency=concurrency, baseline=baseline,
            version=version, tools=declared_tools(agent.tools),
        )  # fmt: skip
        run = await run_rows.insert_run(connection, values)
        if run is None:
            return await _replay(connection, project_id, idempotency_key, request, dataset)
        await _check_active_runs(platform, connection, project_id)
        run = await _pin(connection, run, request, version, failed_in)
        run, lanes = await _plan_work(connection, run, concurrency)
    await enqueue_quietly(platform.queue, platform.settings.queue_name, lanes)
    return StartedRun(run=run, dataset=dataset, replayed=False)


def _check_concurrency(platform: Platform, request: NewRun) -> None:
    limit = platform.settings.quota_run_concurrency
    if request.concurrency is not None and request.concurrency > limit:
        detail = f"A run's concurrency may be at most {limit:,} in this project."
        raise InvalidInput(detail, [FieldError(pointer="/concurrency", detail=detail)])


async def _check_active_runs(platform: Platform, connection: Connection, project_id: UUID) -> None:
    """TooManyRequests when the project already has as many server-mode runs going on as it may
    (CI-mode runs wait on the client, costing the workers nothing, so they do not count)."""
    limit = platform.settings.quota_active_runs
    # The new run is among those counted (its insert is part of this transaction).
    if await run_rows.lock_active_server_runs(connection, project_id) > limit:
        raise TooManyRequests(
            f"Your project has {limit} runs going on, the most it may at once: wait for one "
            "to end, or cancel one.",
            retry_after_s=30,
        )


async def _baseline(connection: Connection, project_id: UUID, request: NewRun) -> UUID | None:
    """The run the new one is compared with: the one asked for, which must be a completed run
    of the same dataset; else the newest completed run of the dataset whose gate passed, else
    the newest completed one, else none."""
    if request.baseline_run_id is None:
        return await run_rows.choose_baseline(connection, project_id, request.dataset_id)
    if not await run_rows.is_completed_run_of(
        connection, project_id, request.dataset_id, request.baseline_run_id
    ):
        detail = BAD_BASELINE
        raise InvalidInput(detail, [FieldError(pointer="/baseline_run_id", detail=detail)])
    return request.baseline_run_id


def _insert_values(
    project_id: UUID,
    request: NewRun,
    idempotency_key: str | None,
    *,
    concurrency: int | None,
    baseline: UUID | None,
    version: DatasetVersion | None,
    tools: DeclaredTools | None,
) -> RunInsert:
    server_mode = request.agent_id is not None
    return RunInsert(
        id=uuid.uuid4(), project_id=project_id, dataset_id=request.dataset_id,
        mode="server" if server_mode else "ci",
        status="queued" if server_mode else "awaiting_results",
        pass_threshold=request.pass_threshold, trials=request.trials, labels=request.labels,
        idempotency_key=idempotency_key, request_hash=request_hash(request),
        agent_id=request.agent_id, concurrency=concurrency, judge_use_cache=request.judge_cache,
        gate=request.gate, baseline_run_id=baseline,
        tags=None if request.tags is None else list(request.tags),
        dataset_version_id=None if version is None else version.id,
        dataset_version=None if version is None else version.name, declared_tools=tools,
    )  # fmt: skip


async def _version_to_run(connection: Connection, request: NewRun) -> DatasetVersion | None:
    """The version the run names, of its dataset (already checked to be the project's)."""
    if request.dataset_version is None:
        return None
    return await find_version(connection, request.dataset_id, request.dataset_version)


async def _pin(
    connection: Connection,
    run: Run,
    request: NewRun,
    version: DatasetVersion | None,
    failed_in: UUID | None = None,
) -> Run:
    """Pin the run's cases; InvalidInput when tags were asked for and no case has one."""
    tags = None if request.tags is None else list(request.tags)
    version_id = None if version is None else version.id
    run = await run_rows.pin_cases(
        connection, run.id, request.dataset_id, failed_in, tags=tags, version_id=version_id
    )
    if tags is not None and run.case_count == 0 and failed_in is None:
        where = "the dataset" if version is None else f"version {version.name!r} of the dataset"
        detail = (
            f"No case in {where} has any of the tags {', '.join(tags)}: nothing would run. "
            "Check the tags' spelling (they are compared exactly, case included)."
        )
        raise InvalidInput(detail, [FieldError(pointer="/tags", detail=detail)])
    await judge_warnings.store_doubted(connection, run)
    return run


async def _plan_work(
    connection: Connection, run: Run, concurrency: int
) -> tuple[Run, list[ChunkRef]]:
    size, count, lanes = chunking(run.total, concurrency)
    await run_rows.set_chunk_size(connection, run.id, size)
    await chunk_rows.create_chunks(connection, run.id, count)
    first = await chunk_rows.queue_next(connection, run.id, lanes)
    if run.total == 0:
        await run_gates.store_gate(connection, run)  # nothing to call: complete, and not passed
    refreshed = await run_rows.run_by_id(connection, run.id)
    assert refreshed is not None
    return refreshed, first


async def _dataset_to_run(connection: Connection, project_id: UUID, dataset_id: UUID) -> Dataset:
    """The dataset a new run is for; a 404 naming /dataset_id when it is not in the project."""
    dataset = await dataset_rows.lock_for_run(connection, project_id, dataset_id)
    if dataset is None:
        detail = "No dataset with this id in your project."
        raise NotFound(detail, [FieldError(pointer="/dataset_id", detail=detail)])
    return dataset


async def _agent_to_call(connection: Connection, project_id: UUID, agent_id: UUID | None) -> Agent:
    agent = (
        None if agent_id is None else await agent_rows.get_agent(connection, project_id, agent_id)
    )
    if agent is None:
        detail = "No agent with this id in your project."
        raise NotFound(detail, [FieldError(pointer="/agent_id", detail=detail)])
    return agent


async def _replay(
    connection: Connection,
    project_id: UUID,
    idempotency_key: str | None,
    request: NewRun,
    dataset: Dataset,
) -> StartedRun:
    """The run this idempotency key created before; Conflict when it was for another request."""
    assert idempotency_key is not None, "only a run with a key can be there already"
    run = await run_rows.run_by_idempotency_key(connection, project_id, idempotency_key)
    assert run is not None
    if run.request_hash != request_hash(request):
        raise Conflict(
            "This Idempotency-Key was already used with a different request; "
            "use a new key for a new run."
        )
    return StartedRun(run=run, dataset=dataset, replayed=True)


def _refuse_unusable_tools(tools: list[dict[str, Any]] | None) -> None:
    """InvalidInput naming each declared tool schema that cannot be compiled."""
    problems = [
        FieldError(pointer="/tools" + at, detail=detail)
        for at, detail in declared_tool_problems(tools)
    ]
    if problems:
        raise InvalidInput("A declared tool's input schema cannot be used.", problems)
