"""The audit log on the wire: an entry as listed, and a page of them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from agentlasso.domain import audit as domain
from agentlasso.domain.audit import Actor, AuditAction, AuditObject


class AuditEntry(msgspec.Struct, kw_only=True):
    """One entry: when, who, what to which object, from where, and what changed (names and
    small values, never a secret's value). `hash` covers the entry and `prev_hash`."""

    seq: int
    at: datetime
    actor: Actor
    action: AuditAction
    object: AuditObject | None
    ip: str | None
    changes: dict[str, Any]
    prev_hash: str
    hash: str


class AuditLogPage(msgspec.Struct, kw_only=True):
    """A page of the audit log, newest first."""

    items: list[AuditEntry]
    next_cursor: str | None


def entry_out(entry: domain.AuditEntry) -> AuditEntry:
    """The API shape of an entry (its hashes in hex)."""
    return AuditEntry(
        seq=entry.seq,
        at=entry.at,
        actor=entry.actor,
        action=entry.action,
        object=entry.object,
        ip=entry.ip,
        changes=dict(entry.changes),
        prev_hash=entry.prev_hash.hex(),
        hash=entry.entry_hash.hex(),
    )
