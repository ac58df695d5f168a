"""What an API key may do: its scope, and which scopes each one includes."""

from __future__ import annotations

from enum import StrEnum
from uuid import UUID

import msgspec


class Scope(StrEnum):
    """An API key's scope, as the key listing and `agentlasso keys create --scope` name it."""

    ADMIN = "admin"
    CI = "ci"
    INGEST = "ingest"
    READ = "read"


# `ci` includes `read`: `agentlasso ci` and `agentlasso run` read the runs and cases they start,
# and a CI key that could read less than a read-only key would be a strange order. `ingest`
# includes nothing else: an exporter's key, sitting in production, reads nothing back.
_INCLUDES: dict[Scope, frozenset[Scope]] = {
    Scope.ADMIN: frozenset(Scope),
    Scope.CI: frozenset({Scope.CI, Scope.READ}),
    Scope.INGEST: frozenset({Scope.INGEST}),
    Scope.READ: frozenset({Scope.READ}),
}

SCOPE_MEANINGS: dict[Scope, str] = {
    Scope.ADMIN: (
        "everything: agents, keys, the judge key, trace retention, datasets, cases, the audit log"
    ),
    Scope.CI: "start and cancel runs, post results, call the agent; and all that `read` reads",
    Scope.INGEST: "send traces (OTLP) only",
    Scope.READ: "read only: every GET but the audit log",
}


def includes(held: Scope, needed: Scope) -> bool:
    """Whether a key of scope `held` may do what needs scope `needed`."""
    return needed in _INCLUDES[held]


def parse_scope(value: object) -> Scope | None:
    """The scope this text names, or None when it names none."""
    if not isinstance(value, str):
        return None
    try:
        return Scope(value)
    except ValueError:
        return None


class LiveKey(msgspec.Struct, frozen=True, kw_only=True):
    """A key that works: which one, its project, and its scope."""

    key_id: UUID
    project_id: UUID
    scope: Scope
