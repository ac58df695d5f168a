"""Dataset use cases, scoped to the caller's project."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db import datasets as dataset_rows
from agentlasso.domain.audit import Caller
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.runs import FINAL_STATUSES
from agentlasso.domain.stored_text import refuse_nul
from agentlasso.domain.web import DatasetSummary, LastRun
from agentlasso.errors import Conflict, NotFound
from agentlasso.services import audit
from agentlasso.services.platform import Platform
from agentlasso.services.run_settling import settle_run

_MISSING = "No dataset with this id in your project."
# A refused delete names this many of the runs in the way.
_RUNS_NAMED = 5


async def create_dataset(
    platform: Platform,
    project_id: UUID,
    name: str,
    description: str | None,
    data_context: dict[str, Any] | None,
) -> Dataset:
    """Create a dataset."""
    refuse_nul({"name": name, "description": description, "data_context": data_context})
    async with platform.pool.acquire() as connection:
        return await dataset_rows.insert_dataset(
            connection, project_id, name, description, data_context
        )


async def get_dataset(platform: Platform, project_id: UUID, dataset_id: UUID) -> Dataset:
    """The dataset, or NotFound."""
    dataset = await dataset_rows.get_dataset(platform.pool, project_id, dataset_id)
    if dataset is None:
        raise NotFound(_MISSING)
    return dataset


async def list_datasets(
    platform: Platform, project_id: UUID, after_seq: int, limit: int
) -> list[Dataset]:
    """A page of the project's datasets."""
    return await dataset_rows.list_datasets(platform.pool, project_id, after_seq, limit)


async def dataset_summaries(
    platform: Platform, project_id: UUID, after_seq: int, limit: int
) -> list[DatasetSummary]:
    """A page of the project's datasets, each with its newest run."""
    summaries = await dataset_rows.dataset_summaries(platform.pool, project_id, after_seq, limit)
    return [
        msgspec.structs.replace(summary, last_run=await _as_it_stands(platform, summary.last_run))
        for summary in summaries
    ]


async def last_run(platform: Platform, dataset: Dataset) -> LastRun | None:
    """The dataset's newest run, if any."""
    return await _as_it_stands(platform, await dataset_rows.last_run(platform.pool, dataset.id))


async def _as_it_stands(platform: Platform, last: LastRun | None) -> LastRun | None:
    """A run going on as its counters stand: its row holds its gate only once it has ended
    (its stores count in tallies, app/db/run_counts.py)."""
    if last is None or last.status in FINAL_STATUSES:
        return last
    run = await settle_run(platform.pool, last.id)
    if run is None:
        return last
    return LastRun(
        id=run.id, status=run.status, pass_rate=run.pass_rate, ci_pass=run.ci_pass,
        created_at=run.created_at,
    )  # fmt: skip


async def dataset_names(
    platform: Platform, project_id: UUID, dataset_ids: list[UUID]
) -> dict[UUID, str]:
    """The names of these datasets of the project (deleted ones too)."""
    return await dataset_rows.dataset_names(platform.pool, project_id, dataset_ids)


async def update_dataset(
    platform: Platform, project_id: UUID, dataset_id: UUID, changes: dict[str, Any]
) -> Dataset:
    """Change the named fields, keeping the others."""
    refuse_nul(changes)
    async with platform.pool.acquire() as connection, connection.transaction():
        current = await dataset_rows.get_dataset(connection, project_id, dataset_id)
        if current is None:
            raise NotFound(_MISSING)
        merged = {
            "name": current.name,
            "description": current.description,
            "data_context": current.data_context,
            **changes,
        }
        updated = await dataset_rows.update_dataset(connection, project_id, dataset_id, **merged)
    assert updated is not None
    return updated


async def delete_dataset(
    platform: Platform, project_id: UUID, dataset_id: UUID, caller: Caller
) -> None:
    """Delete a dataset and its cases; its finished runs stay readable. Refused (Conflict)
    while a run of it is going on."""
    async with platform.pool.acquire() as connection, connection.transaction():
        dataset = await dataset_rows.lock_for_delete(connection, project_id, dataset_id)
        if dataset is None:
            raise NotFound(_MISSING)
        going_on = await dataset_rows.runs_going_on(connection, dataset_id, _RUNS_NAMED + 1)
        if going_on:
            raise Conflict(_runs_going_on(going_on))
        await dataset_rows.delete_dataset(connection, dataset_id)
        await audit.record(
            connection, project_id, caller, "dataset.deleted", audit.about("dataset", dataset_id),
            name=dataset.name, cases=dataset.case_count,
        )  # fmt: skip


def _runs_going_on(run_ids: list[UUID]) -> str:
    named = ", ".join(str(run_id) for run_id in run_ids[:_RUNS_NAMED])
    more = " and more" if len(run_ids) > _RUNS_NAMED else ""
    return (
        f"The dataset has runs going on ({named}{more}). Cancel them or let them finish, "
        "then delete it; its finished runs stay readable."
    )
