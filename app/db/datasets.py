"""Datasets, always read and written inside one project."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.web import DatasetSummary, LastRun

_COLUMNS = ", ".join(Dataset.__struct_fields__)

_INSERT = f"""
INSERT INTO datasets (project_id, name, description, data_context)
VALUES ($1, $2, $3, $4)
RETURNING {_COLUMNS}
"""

# A deleted dataset is gone for every read; its row stays for the runs that used it.
_GET = f"""
SELECT {_COLUMNS} FROM datasets WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL
"""

# A run being created holds this, so the dataset cannot be deleted under it.
_LOCK_FOR_RUN = _GET + " FOR SHARE"

_LOCK_FOR_DELETE = _GET + " FOR UPDATE"

_RUNS_GOING_ON = """
SELECT id FROM eval_runs
WHERE dataset_id = $1 AND status NOT IN ('completed', 'cancelled', 'failed')
ORDER BY seq LIMIT $2
"""

_LIST = f"""
SELECT {_COLUMNS} FROM datasets
WHERE project_id = $1 AND seq > $2 AND deleted_at IS NULL
ORDER BY seq
LIMIT $3
"""

_UPDATE = f"""
UPDATE datasets
SET name = $3, description = $4, data_context = $5, updated_at = now()
WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL
RETURNING {_COLUMNS}
"""

# The live cases go; the revisions runs pinned stay (they belong to the dataset row, kept).
_DELETE = """
WITH hidden AS (UPDATE datasets SET deleted_at = now() WHERE id = $1 RETURNING id)
DELETE FROM test_cases WHERE dataset_id IN (SELECT id FROM hidden)
"""


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


async def lock_for_run(
    connection: Connection, project_id: UUID, dataset_id: UUID
) -> Dataset | None:
    """The dataset, held until the transaction ends so that it cannot be deleted meanwhile."""
    row = await connection.fetchrow(_LOCK_FOR_RUN, project_id, dataset_id)
    return None if row is None else Dataset(**row)


async def lock_for_delete(
    connection: Connection, project_id: UUID, dataset_id: UUID
) -> Dataset | None:
    """The dataset, locked against new runs until the transaction ends."""
    row = await connection.fetchrow(_LOCK_FOR_DELETE, project_id, dataset_id)
    return None if row is None else Dataset(**row)


async def runs_going_on(connection: Connection, dataset_id: UUID, limit: int) -> list[UUID]:
    """Runs of the dataset that have not ended, oldest first."""
    return [row["id"] for row in await connection.fetch(_RUNS_GOING_ON, dataset_id, limit)]


async def delete_dataset(connection: Connection, dataset_id: UUID) -> None:
    """Hide the dataset and delete its live cases (call under lock_for_delete)."""
    await connection.execute(_DELETE, dataset_id)


_LAST_RUN_FIELDS = LastRun.__struct_fields__
# A dataset's newest run (eval_runs_dataset_seq_idx finds it at once); `{}` names the dataset.
_NEWEST_RUN = f"""
SELECT {", ".join(_LAST_RUN_FIELDS)} FROM eval_runs
WHERE dataset_id = {{}} ORDER BY seq DESC LIMIT 1
"""

_LAST_RUN = _NEWEST_RUN.format("$1")

_SUMMARIES = f"""
SELECT {", ".join(f"d.{name}" for name in Dataset.__struct_fields__)},
       {", ".join(f"r.{name} AS run_{name}" for name in _LAST_RUN_FIELDS)}
FROM datasets d
LEFT JOIN LATERAL ({_NEWEST_RUN.format("d.id")}) r ON true
WHERE d.project_id = $1 AND d.seq > $2 AND d.deleted_at IS NULL
ORDER BY d.seq
LIMIT $3
"""


async def dataset_summaries(
    executor: Executor, project_id: UUID, after_seq: int, limit: int
) -> list[DatasetSummary]:
    """One page of the project's datasets with their newest runs, oldest first."""
    rows = await executor.fetch(_SUMMARIES, project_id, after_seq, limit)
    return [
        DatasetSummary(
            dataset=Dataset(**{name: row[name] for name in Dataset.__struct_fields__}),
            last_run=None
            if row["run_id"] is None
            else LastRun(**{name: row[f"run_{name}"] for name in _LAST_RUN_FIELDS}),
        )
        for row in rows
    ]


async def last_run(executor: Executor, dataset_id: UUID) -> LastRun | None:
    """The dataset's newest run, if it has one."""
    row = await executor.fetchrow(_LAST_RUN, dataset_id)
    return None if row is None else LastRun(**row)


# Deleted ones too: their runs stay readable, and say which dataset they ran.
_NAMES = "SELECT id, name FROM datasets WHERE project_id = $1 AND id = ANY($2::uuid[])"


async def dataset_names(
    executor: Executor, project_id: UUID, dataset_ids: list[UUID]
) -> dict[UUID, str]:
    """The names of these datasets of the project."""
    rows = await executor.fetch(_NAMES, project_id, dataset_ids)
    return {row["id"]: row["name"] for row in rows}
