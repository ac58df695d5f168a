"""Dataset use cases, scoped to the caller's project."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg

from app.db import datasets as rows
from app.errors import NotFound

_MISSING = "No dataset with this id in your project."


async def create_dataset(
    pool: asyncpg.Pool,
    project_id: UUID,
    name: str,
    description: str | None,
    data_context: dict[str, Any] | None,
) -> asyncpg.Record:
    """Create a dataset."""
    async with pool.acquire() as connection:
        return await rows.insert_dataset(connection, project_id, name, description, data_context)


async def get_dataset(pool: asyncpg.Pool, project_id: UUID, dataset_id: UUID) -> asyncpg.Record:
    """The dataset, or NotFound."""
    row = await rows.get_dataset(pool, project_id, dataset_id)
    if row is None:
        raise NotFound(_MISSING)
    return row


async def list_datasets(
    pool: asyncpg.Pool, project_id: UUID, after_seq: int, limit: int
) -> list[asyncpg.Record]:
    """A page of the project's datasets."""
    return await rows.list_datasets(pool, project_id, after_seq, limit)


async def update_dataset(
    pool: asyncpg.Pool, project_id: UUID, dataset_id: UUID, changes: dict[str, Any]
) -> asyncpg.Record:
    """Change the named fields, keeping the others."""
    async with pool.acquire() as connection, connection.transaction():
        current = await rows.get_dataset(connection, project_id, dataset_id)
        if current is None:
            raise NotFound(_MISSING)
        merged = {key: current[key] for key in ("name", "description", "data_context")}
        merged.update(changes)
        row = await rows.update_dataset(connection, project_id, dataset_id, **merged)
    assert row is not None
    return row


async def delete_dataset(pool: asyncpg.Pool, project_id: UUID, dataset_id: UUID) -> None:
    """Delete a dataset and its cases."""
    if not await rows.delete_dataset(pool, project_id, dataset_id):
        raise NotFound(_MISSING)
