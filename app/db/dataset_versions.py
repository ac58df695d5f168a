"""Dataset versions: the revision each live case had when the version was frozen."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.datasets import DatasetVersion

_COLUMNS = ", ".join(DatasetVersion.__struct_fields__)

_INSERT = f"""
INSERT INTO dataset_versions (id, dataset_id, name, case_count) VALUES ($1, $2, $3, 0)
ON CONFLICT (dataset_id, name) DO NOTHING
RETURNING {_COLUMNS}
"""

# One statement: the cases as one snapshot sees them, whatever is written meanwhile.
_FREEZE = """
INSERT INTO dataset_version_cases (version_id, position, test_case_id, revision_id)
SELECT $1, row_number() OVER (ORDER BY seq), id, current_revision_id
FROM test_cases WHERE dataset_id = $2
"""

_SET_COUNT = f"""
UPDATE dataset_versions SET case_count = $2 WHERE id = $1 RETURNING {_COLUMNS}
"""

_COUNT = "SELECT count(*) FROM dataset_versions WHERE dataset_id = $1"

_LIST = f"""
SELECT {_COLUMNS} FROM dataset_versions
WHERE dataset_id = $1 AND ($2::bigint IS NULL OR seq < $2)
ORDER BY seq DESC
LIMIT $3
"""

# A run names its version by id or by name; a name is never a UUID, so the two cannot clash.
_BY_ID = f"SELECT {_COLUMNS} FROM dataset_versions WHERE dataset_id = $1 AND id = $2"
_BY_NAME = f"SELECT {_COLUMNS} FROM dataset_versions WHERE dataset_id = $1 AND name = $2"


async def freeze_version(
    connection: Connection, version_id: UUID, dataset_id: UUID, name: str
) -> DatasetVersion | None:
    """Store a version of the dataset's live cases at their current revisions; None when the
    dataset has a version of this name already."""
    row = await connection.fetchrow(_INSERT, version_id, dataset_id, name)
    if row is None:
        return None
    status: str = await connection.execute(_FREEZE, version_id, dataset_id)
    row = await connection.fetchrow(_SET_COUNT, version_id, int(status.split()[-1]))
    assert row is not None, "the version was inserted in this transaction"
    return DatasetVersion(**row)


async def count_versions(executor: Executor, dataset_id: UUID) -> int:
    """How many versions the dataset has."""
    count: int = await executor.fetchval(_COUNT, dataset_id)
    return count


async def list_versions(
    executor: Executor, dataset_id: UUID, before_seq: int | None, limit: int
) -> list[DatasetVersion]:
    """A page of the dataset's versions, newest first."""
    rows = await executor.fetch(_LIST, dataset_id, before_seq, limit)
    return [DatasetVersion(**row) for row in rows]


async def version_by_id(
    executor: Executor, dataset_id: UUID, version_id: UUID
) -> DatasetVersion | None:
    """The dataset's version with this id."""
    row = await executor.fetchrow(_BY_ID, dataset_id, version_id)
    return None if row is None else DatasetVersion(**row)


async def version_by_name(executor: Executor, dataset_id: UUID, name: str) -> DatasetVersion | None:
    """The dataset's version of this name."""
    row = await executor.fetchrow(_BY_NAME, dataset_id, name)
    return None if row is None else DatasetVersion(**row)
