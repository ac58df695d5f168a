"""Datasets, always read and written inside one project."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from app.db.pool import Connection, Executor
from app.domain.datasets import Dataset

_COLUMNS = ", ".join(Dataset.__struct_fields__)

_INSERT = f"""
INSERT INTO datasets (project_id, name, description, data_context)
VALUES ($1, $2, $3, $4)
RETURNING {_COLUMNS}
"""

_GET = f"SELECT {_COLUMNS} FROM datasets WHERE project_id = $1 AND id = $2"

_LIST = f"""
SELECT {_COLUMNS} FROM datasets
WHERE project_id = $1 AND seq > $2
ORDER BY seq
LIMIT $3
"""

_UPDATE = f"""
UPDATE datasets
SET name = $3, description = $4, data_context = $5, updated_at = now()
WHERE project_id = $1 AND id = $2
RETURNING {_COLUMNS}
"""

_DELETE = "DELETE FROM datasets WHERE project_id = $1 AND id = $2"


async def insert_dataset(
    connection: Connection,
    project_id: UUID,
    name: str,
    description: str | None,
    data_context: dict[str, Any] | None,
) -> Dataset:
    """Create a dataset and return its row."""
    row = await connection.fetchrow(_INSERT, project_id, name, description, data_context)
    assert row is not None, "RETURNING always yields the row written"
    return Dataset(**row)


async def get_dataset(executor: Executor, project_id: UUID, dataset_id: UUID) -> Dataset | None:
    """The dataset, or None when it is not in this project."""
    row = await executor.fetchrow(_GET, project_id, dataset_id)
    return None if row is None else Dataset(**row)


async def list_datasets(
    executor: Executor, project_id: UUID, after_seq: int, limit: int
) -> list[Dataset]:
    """One page of the project's datasets, oldest first."""
    return [Dataset(**row) for row in await executor.fetch(_LIST, project_id, after_seq, limit)]


async def update_dataset(
    connection: Connection,
    project_id: UUID,
    dataset_id: UUID,
    name: str,
    description: str | None,
    data_context: dict[str, Any] | None,
) -> Dataset | None:
    """Overwrite the dataset's fields; None when it is not in this project."""
    row = await connection.fetchrow(
        _UPDATE, project_id, dataset_id, name, description, data_context
    )
    return None if row is None else Dataset(**row)


async def delete_dataset(executor: Executor, project_id: UUID, dataset_id: UUID) -> bool:
    """Delete the dataset with its cases; False when it is not in this project."""
    status: str = await executor.execute(_DELETE, project_id, dataset_id)
    return status == "DELETE 1"
