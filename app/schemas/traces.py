"""How a project keeps its traces, on the wire."""

from __future__ import annotations

from typing import Annotated

import msgspec


class TraceSettings(msgspec.Struct, kw_only=True):
    """How the project keeps its traces."""

    retention_days: int


class TraceSettingsUpdate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Keep traces this many days after they arrive (1 to 3650)."""

    retention_days: Annotated[int, msgspec.Meta(ge=1, le=3650)]
