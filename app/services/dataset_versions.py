"""Freezing a dataset's cases as a named version, listing versions, finding the one a run
names."""

from __future__ import annotations

import uuid
from uuid import UUID

from agentlasso.db import dataset_versions as version_rows
from agentlasso.db import datasets as dataset_rows
from agentlasso.db.pool import Executor
from agentlasso.domain.datasets import DatasetVersion
from agentlasso.domain.stored_text import refuse_nul
from agentlasso.errors import Conflict, FieldError, InvalidInput, NotFound
from agentlasso.services.platform import Platform

# Each version holds a row per case: a bound keeps a large dataset's versions from growing
# without end (a 100,000-case dataset at this many versions is 100 million rows).
MAX_VERSIONS_PER_DATASET = 1_000
MAX_NAME_CHARS = 200
_MISSING_DATASET = "No dataset with this id in your project."


def _name_problem(name: str) -> str | None:
    """Why a version cannot have this name, or None."""
    if not name.strip():
        return "A version needs a name (for example v1 or 2025-06-release)."
    if name != name.strip():
        return "A version's name may not start or end with whitespace."
    try:
        UUID(name)
    except ValueError:
        return None
    # A run names its version by id or by name: a name of an id's shape could mean either.
    return "A version's name may not be a UUID (a run names its version by id or by name)."


async def freeze_version(
    platform: Platform, project_id: UUID, dataset_id: UUID, name: str
) -> DatasetVersion:
    """A new version of the dataset: the current revision of every live case, in order.
    Conflict when the dataset has a version of this name (or as many versions as it may)."""
    refuse_nul({"name": name})
    problem = _name_problem(name)
    if problem is not None:
        raise InvalidInput(problem, [FieldError(pointer="/name", detail=problem)])
    async with platform.pool.acquire() as connection, connection.transaction():
        # Held until the version is stored, so the dataset cannot be deleted under it.
        if await dataset_rows.lock_for_run(connection, project_id, dataset_id) is None:
            raise NotFound(_MISSING_DATASET)
        if await version_rows.count_versions(connection, dataset_id) >= MAX_VERSIONS_PER_DATASET:
            raise Conflict(
                f"A dataset may have {MAX_VERSIONS_PER_DATASET:,} versions; this one has "
                "as many. Copy it to a new dataset to freeze more."
            )
        version = await version_rows.freeze_version(connection, uuid.uuid4(), dataset_id, name)
    if version is None:
        raise Conflict(f"This dataset already has a version named {name!r}: choose another name.")
    return version


async def list_versions(
    platform: Platform, project_id: UUID, dataset_id: UUID, before_seq: int | None, limit: int
) -> list[DatasetVersion]:
    """A page of the dataset's versions, newest first."""
    if await dataset_rows.get_dataset(platform.pool, project_id, dataset_id) is None:
        raise NotFound(_MISSING_DATASET)
    return await version_rows.list_versions(platform.pool, dataset_id, before_seq, limit)


async def find_version(executor: Executor, dataset_id: UUID, named: str) -> DatasetVersion:
    """The dataset's version a run names, by id or by name (the caller has checked the dataset
    is the project's); NotFound naming /dataset_version when it has none such."""
    try:
        version_id = UUID(named)
    except ValueError:
        version = await version_rows.version_by_name(executor, dataset_id, named)
    else:
        version = await version_rows.version_by_id(executor, dataset_id, version_id)
    if version is None:
        detail = "The dataset has no version with this id or name."
        raise NotFound(detail, [FieldError(pointer="/dataset_version", detail=detail)])
    return version
