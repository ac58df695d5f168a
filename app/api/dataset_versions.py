"""Dataset versions: /api/v1/datasets/{id}/versions, freezing the cases and listing what was
frozen."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.params import FromPath, JSONBody

from agentlasso.domain import datasets as domain
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    decode_cursor,
    next_cursor,
    parse_id,
)
from agentlasso.schemas.datasets import DatasetVersion, DatasetVersionCreate, DatasetVersionPage
from agentlasso.services import dataset_versions as service


def version_out(version: domain.DatasetVersion) -> DatasetVersion:
    """The API shape of a version."""
    return DatasetVersion(
        id=version.id,
        dataset_id=version.dataset_id,
        name=version.name,
        case_count=version.case_count,
        created_at=version.created_at,
    )


class DatasetVersionController(Controller):
    """The versions of one dataset."""

    path = "/datasets/{dataset_id:str}/versions"
    tags = ("datasets",)

    @post(operation_id="createDatasetVersion")
    async def create(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
        data: JSONBody[DatasetVersionCreate],
    ) -> DatasetVersion:
        """Freeze the current revision of every case under a name; a run may then name it."""
        version = await service.freeze_version(
            platform, project_id, parse_id(dataset_id, "dataset"), data.name
        )
        return version_out(version)

    @get(operation_id="listDatasetVersions")
    async def list(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> DatasetVersionPage:
        """The dataset's versions, newest first, a page at a time."""
        before = decode_cursor(cursor) or None
        versions = await service.list_versions(
            platform, project_id, parse_id(dataset_id, "dataset"), before, limit + 1
        )
        return DatasetVersionPage(
            items=[version_out(version) for version in versions[:limit]],
            next_cursor=next_cursor([version.seq for version in versions], limit),
        )
