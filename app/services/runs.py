"""Creating and reading runs (contract sections 5.1 to 5.4)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from app.db import case_results as result_rows
from app.db import datasets as dataset_rows
from app.db import runs as run_rows
from app.db.pool import Connection
from app.domain.results import Gate, RunCounts
from app.errors import Conflict, FieldError, InvalidInput, NotFound
from app.grading import decide_gate
from app.services.run_watch import RunWatcher

FINAL_STATUSES = frozenset({"completed", "cancelled", "failed"})


class NewRun(msgspec.Struct, frozen=True, kw_only=True):
    """What a client asks for when it starts a run."""

    dataset_id: UUID
    pass_threshold: float = 1.0
    agent_id: UUID | None = None
    trials: int = 1
    concurrency: int | None = None
    labels: dict[str, str] | None = None
    # False: ask the judge afresh even when an identical request has a cached verdict.
    judge_cache: bool = True


class CreatedRun(msgspec.Struct, frozen=True, kw_only=True):
    """A run as created (or found again through its idempotency key), with its dataset."""

    run: Any  # asyncpg.Record
    data_context: dict[str, Any] | None
    replayed: bool


def request_hash(request: NewRun) -> bytes:
    """A fingerprint of the request, to tell a retry from another request with the same key."""
    return hashlib.sha256(msgspec.json.encode(request)).digest()


def counts_of(run: asyncpg.Record) -> RunCounts:
    """The gate's view of a run row's counters."""
    return RunCounts(
        total=run["total"],
        done=run["done"],
        graded=run["graded"],
        passed=run["passed"],
        no_checks=run["no_checks"],
    )


def gate_of(run: asyncpg.Record) -> Gate:
    """The CI gate for a run row as it stands; never a pass while verdicts are awaited."""
    gate = decide_gate(counts_of(run), run["pass_threshold"])
    waiting = run["judge_pending"]
    # Missing results are the more basic reason; say that one while it holds.
    if not waiting or run["done"] < run["total"]:
        return gate
    noun = "case waits" if waiting == 1 else "cases wait"
    reason = f"The AI judge has not finished: {waiting} {noun} for verdicts."
    return Gate(pass_rate=gate.pass_rate, ci_pass=False, ci_fail_reason=reason)


async def create_ci_run(
    pool: asyncpg.Pool, project_id: UUID, request: NewRun, idempotency_key: str | None
) -> CreatedRun:
    """Start a CI-mode run: pin the dataset's current revisions; the client posts results."""
    if request.trials != 1:
        # A CI client posts one result per case: a run waiting for more could never complete.
        detail = "trials are for runs where the platform calls the agent (with agent_id)."
        raise InvalidInput(detail, [FieldError(pointer="/trials", detail=detail)])
    async with pool.acquire() as connection, connection.transaction():
        dataset = await dataset_to_run(connection, project_id, request.dataset_id)
        values = (
            uuid.uuid4(),
            project_id,
            request.dataset_id,
            "ci",
            "awaiting_results",
            request.pass_threshold,
            request.trials,
            request.labels,
            idempotency_key,
            request_hash(request),
            None,
            None,
            request.judge_cache,
        )
        run = await run_rows.insert_run(connection, values)
        if run is None:
            assert idempotency_key is not None
            return await replay(connection, project_id, idempotency_key, request, dataset)
        run = await run_rows.pin_cases(connection, run["id"], request.dataset_id)
        run = await store_gate(connection, run)
    return CreatedRun(run=run, data_context=dataset["data_context"], replayed=False)


async def dataset_to_run(
    connection: Connection, project_id: UUID, dataset_id: UUID
) -> asyncpg.Record:
    """The dataset a new run is for; a 422 naming /dataset_id when it is not in the project."""
    dataset = await dataset_rows.get_dataset(connection, project_id, dataset_id)
    if dataset is None:
        detail = "No dataset with this id in your project."
        raise InvalidInput(detail, [FieldError(pointer="/dataset_id", detail=detail)])
    return dataset


async def replay(
    connection: Connection,
    project_id: UUID,
    idempotency_key: str,
    request: NewRun,
    dataset: asyncpg.Record,
) -> CreatedRun:
    run = await run_rows.run_by_idempotency_key(connection, project_id, idempotency_key)
    assert run is not None
    if run["request_hash"] != request_hash(request):
        raise Conflict(
            "This Idempotency-Key was already used with a different request; "
            "use a new key for a new run."
        )
    return CreatedRun(run=run, data_context=dataset["data_context"], replayed=True)


async def store_gate(connection: Connection, run: asyncpg.Record) -> asyncpg.Record:
    """Recompute the gate from the counters; a run with every result in is completed."""
    gate = gate_of(run)
    status = run["status"]
    if status not in FINAL_STATUSES and run["done"] == run["total"]:
        # Every result is in; the run ends when the judge's last verdict lands.
        status = "grading" if run["judge_pending"] else "completed"
    return await run_rows.set_verdict(
        connection, run["id"], status, gate.pass_rate, gate.ci_pass, gate.ci_fail_reason
    )


async def pinned_cases(pool: asyncpg.Pool, run_id: UUID) -> list[asyncpg.Record]:
    """The run's cases at their pinned revisions."""
    async with pool.acquire() as connection:
        return await run_rows.pinned_cases(connection, run_id)


async def get_run(pool: asyncpg.Pool, project_id: UUID, run_id: UUID) -> asyncpg.Record:
    """The run, or NotFound."""
    run = await run_rows.get_run(pool, project_id, run_id)
    if run is None:
        raise NotFound("No run with this id in your project.")
    return run


async def list_runs(
    pool: asyncpg.Pool,
    project_id: UUID,
    dataset_id: UUID | None,
    status: str | None,
    before_seq: int | None,
    limit: int,
) -> list[asyncpg.Record]:
    """A page of runs, newest first."""
    return await run_rows.list_runs(pool, project_id, dataset_id, status, before_seq, limit)


async def list_results(
    pool: asyncpg.Pool,
    project_id: UUID,
    run_id: UUID,
    after_seq: int,
    outcome: str | None,
    limit: int,
) -> list[asyncpg.Record]:
    """A page of the run's case results, optionally only one outcome."""
    await get_run(pool, project_id, run_id)
    return await result_rows.list_results(pool, run_id, after_seq, outcome, limit)


async def cancel_run(pool: asyncpg.Pool, project_id: UUID, run_id: UUID) -> asyncpg.Record:
    """Cancel a run that has not finished; its results so far are kept."""
    async with pool.acquire() as connection, connection.transaction():
        run = await run_rows.lock_run(connection, project_id, run_id)
        if run is None:
            raise NotFound("No run with this id in your project.")
        if run["status"] in FINAL_STATUSES:
            return run
        gate = gate_of(run)
        return await run_rows.set_verdict(
            connection, run_id, "cancelled", gate.pass_rate, False, _cancelled_reason(gate)
        )


def _cancelled_reason(gate: Gate) -> str:
    return "The run was cancelled before it finished." + (
        f" {gate.ci_fail_reason}" if gate.ci_fail_reason else ""
    )


async def wait_for_run(
    pool: asyncpg.Pool, watcher: RunWatcher, project_id: UUID, run_id: UUID, wait_s: float
) -> asyncpg.Record:
    """The run once it reaches a final status, or as it stands after `wait_s` seconds."""
    run = await get_run(pool, project_id, run_id)
    if run["status"] in FINAL_STATUSES or wait_s <= 0:
        return run
    async with watcher.subscribe(run_id) as events:
        # Read again once subscribed: the run may have ended between the first read and now.
        run = await get_run(pool, project_id, run_id)
        deadline = asyncio.get_running_loop().time() + wait_s
        while run["status"] not in FINAL_STATUSES:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                break
            try:
                event = await asyncio.wait_for(events.get(), remaining)
            except TimeoutError:
                break
            if event.kind == "shutdown":
                break
            run = event.run or run
    return run
