"""A dataset: a named suite of test cases and the data context they share."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec


class Dataset(msgspec.Struct, frozen=True, kw_only=True):
    """A dataset as stored; field names are the table's column names."""

    id: UUID
    seq: int
    name: str
    description: str | None
    # Values every case can draw on; sent to the agent with each case and shown to the judge.
    data_context: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    # Its live test cases, kept by every write of cases.
    case_count: int


class DatasetVersion(msgspec.Struct, frozen=True, kw_only=True):
    """A dataset's cases frozen at the revisions they had; field names are the columns."""

    id: UUID
    dataset_id: UUID
    seq: int
    name: str
    # The live cases it froze (a case deleted since is still in it).
    case_count: int
    created_at: datetime
