"""/api/v1/datasets: create, read, update, delete."""

from __future__ import annotations

import msgspec
from litestar import Controller, delete, get, patch, post
from litestar.params import FromPath, JSONBody

from agentlasso.domain import datasets as domain
from agentlasso.http.auth import CallerDep, PlatformDep, ProjectId
from agentlasso.http.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    decode_cursor,
    next_cursor,
    parse_id,
)
from agentlasso.schemas.datasets import Dataset, DatasetCreate, DatasetPage, DatasetUpdate
from agentlasso.services import datasets as service


def dataset_out(dataset: domain.Dataset) -> Dataset:
    """The API shape of a dataset."""
    return msgspec.convert(dataset, Dataset, from_attributes=True)


class DatasetController(Controller):
    """Datasets of the caller's project."""

    path = "/datasets"
    tags = ("datasets",)

    @post(operation_id="createDataset")
    async def create(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        data: JSONBody[DatasetCreate],
    ) -> Dataset:
        """Create a dataset."""
        dataset = await service.create_dataset(
            platform, project_id, data.name, data.description, data.data_context
        )
        return dataset_out(dataset)

    @get(operation_id="listDatasets")
    async def list(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> DatasetPage:
        """The project's datasets, oldest first."""
        datasets = await service.list_datasets(
            platform, project_id, decode_cursor(cursor), limit + 1
        )
        return DatasetPage(
            items=[dataset_out(dataset) for dataset in datasets[:limit]],
            next_cursor=next_cursor([dataset.seq for dataset in datasets], limit),
        )

    @get("/{dataset_id:str}", operation_id="getDataset")
    async def read(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
    ) -> Dataset:
        """One dataset."""
        dataset = await service.get_dataset(platform, project_id, parse_id(dataset_id, "dataset"))
        return dataset_out(dataset)

    @patch("/{dataset_id:str}", operation_id="updateDataset")
    async def update(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
        data: JSONBody[DatasetUpdate],
    ) -> Dataset:
        """Change a dataset's name, description or data context."""
        changes = {
            field: value
            for field in ("name", "description", "data_context")
            if (value := getattr(data, field)) is not msgspec.UNSET
        }
        dataset = await service.update_dataset(
            platform, project_id, parse_id(dataset_id, "dataset"), changes
        )
        return dataset_out(dataset)

    @delete("/{dataset_id:str}", operation_id="deleteDataset")
    async def remove(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        dataset_id: FromPath[str],
    ) -> None:
        """Delete a dataset with its test cases."""
        await service.delete_dataset(platform, project_id, parse_id(dataset_id, "dataset"), caller)
