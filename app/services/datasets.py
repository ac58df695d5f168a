"""Dataset use cases, scoped to the caller's project."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from app.db import datasets as dataset_rows
from app.domain.datasets import Dataset
from app.errors import NotFound
from app.services.platform import Platform

_MISSING = "No dataset with this id in your project."


async def create_dataset(
    platform: Platform,
    project_id: UUID,
    name: str,
    description: str | None,
    data_context: dict[str, Any] | None,
) -> Dataset:
    """Create a dataset."""
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


async def update_dataset(
    platform: Platform, project_id: UUID, dataset_id: UUID, changes: dict[str, Any]
) -> Dataset:
    """Change the named fields, keeping the others."""
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


async def delete_dataset(platform: Platform, project_id: UUID, dataset_id: UUID) -> None:
    """Delete a dataset and its cases."""
    if not await dataset_rows.delete_dataset(platform.pool, project_id, dataset_id):
        raise NotFound(_MISSING)
