"""Datasets on the wire."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import msgspec

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Description = Annotated[str, msgspec.Meta(max_length=10_000)]


class DatasetCreate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A new dataset."""

    name: Name
    description: Description | None = None
    data_context: dict[str, Any] | None = None


class DatasetUpdate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Fields to change; absent ones are kept, null clears."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    description: Description | msgspec.UnsetType | None = msgspec.UNSET
    data_context: dict[str, Any] | msgspec.UnsetType | None = msgspec.UNSET


class Dataset(msgspec.Struct, kw_only=True):
    """A dataset as the API shows it."""

    id: UUID
    name: str
    description: str | None
    data_context: dict[str, Any] | None
    # Its test cases now.
    case_count: int
    created_at: datetime
    updated_at: datetime


class DatasetPage(msgspec.Struct, kw_only=True):
    """A page of datasets."""

    items: list[Dataset]
    next_cursor: str | None


class DatasetVersionCreate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A version to freeze: the current revision of every live case, under this name."""

    # Unique in the dataset; not a UUID (a run names its version by id or by name).
    name: Name


class DatasetVersion(msgspec.Struct, kw_only=True):
    """A frozen version of a dataset's cases."""

    id: UUID
    dataset_id: UUID
    name: str
    # The cases it froze; a case edited or deleted since runs as it was then.
    case_count: int
    created_at: datetime


class DatasetVersionPage(msgspec.Struct, kw_only=True):
    """A page of a dataset's versions, newest first."""

    items: list[DatasetVersion]
    next_cursor: str | None
