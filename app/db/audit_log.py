"""The audit log's rows: appended under a per-project lock, read newest first or in chain order."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.audit import (
    GENESIS_HASH,
    Actor,
    AuditEntry,
    AuditEvent,
    AuditFilter,
    AuditObject,
    Caller,
    actor_label,
    entry_hash,
)

# The class of the two-part advisory lock that serialises a project's appends (any fixed int4;
# the two-part key space is apart from the migration runner's one-part lock).
_LOCK_CLASS = 7_346_225
# Until the appending transaction ends: two writers cannot both take the same place in the
# chain (the primary key would refuse the second one anyway, failing its whole action).
_LOCK = "SELECT pg_advisory_xact_lock($1, hashtext($2::uuid::text))"
# Read after the lock: a statement's snapshot is taken as it starts.
_HEAD = """
SELECT clock_timestamp() AS at, head.seq, head.entry_hash
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (
    SELECT seq, entry_hash FROM audit_log WHERE project_id = $1 ORDER BY seq DESC LIMIT 1
) AS head ON true
"""
_INSERT = """
INSERT INTO audit_log (project_id, seq, at, actor, actor_label, action, object_type, object_id,
                       ip, changes, prev_hash, entry_hash)
VALUES ($1, $2, $3, $4::text::jsonb, $5, $6, $7, $8, $9, $10::text::jsonb, $11, $12)
"""
_COLUMNS = """
SELECT project_id, seq, at, actor, action, object_type, object_id, ip, changes, prev_hash,
       entry_hash
FROM audit_log
"""
_LIST = (
    _COLUMNS
    + """
WHERE project_id = $1
  AND ($2::text IS NULL OR actor_label = $2)
  AND ($3::text IS NULL OR action = $3)
  AND ($4::bigint IS NULL OR seq < $4)
ORDER BY seq DESC
LIMIT $5
"""
)
_encoder = msgspec.json.Encoder()
_IN_CHAIN_ORDER = _COLUMNS + "WHERE project_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"


async def append(
    connection: Connection, project_id: UUID, caller: Caller, event: AuditEvent
) -> AuditEntry:
    """Add an entry at the end of the project's chain, in the caller's transaction."""
    await connection.execute(_LOCK, _LOCK_CLASS, project_id)
    head = await connection.fetchrow(_HEAD, project_id)
    assert head is not None, "the query always yields one row"
    prev_hash = GENESIS_HASH if head["seq"] is None else bytes(head["entry_hash"])
    unhashed = AuditEntry(
        project_id=project_id,
        seq=(head["seq"] or 0) + 1,
        at=head["at"],
        actor=caller.actor,
        action=event.action,
        object=event.object,
        ip=caller.ip,
        changes=event.changes,
        prev_hash=prev_hash,
        entry_hash=b"",
    )
    entry = msgspec.structs.replace(unhashed, entry_hash=entry_hash(prev_hash, unhashed))
    await connection.execute(
        _INSERT,
        project_id,
        entry.seq,
        entry.at,
        _json_text(entry.actor),
        actor_label(entry.actor),
        entry.action,
        None if entry.object is None else entry.object.type,
        None if entry.object is None else entry.object.id,
        entry.ip,
        _json_text(entry.changes),
        entry.prev_hash,
        entry.entry_hash,
    )
    return entry


async def list_entries(
    executor: Executor,
    project_id: UUID,
    which: AuditFilter,
    before_seq: int | None,
    limit: int,
) -> list[AuditEntry]:
    """A page of the project's entries, newest first, before `before_seq` when given."""
    rows = await executor.fetch(_LIST, project_id, which.actor, which.action, before_seq, limit)
    return [_entry(row) for row in rows]


async def entries_in_chain_order(
    executor: Executor, project_id: UUID, after_seq: int, limit: int
) -> list[AuditEntry]:
    """Up to `limit` of the project's entries after `after_seq`, oldest first."""
    rows = await executor.fetch(_IN_CHAIN_ORDER, project_id, after_seq, limit)
    return [_entry(row) for row in rows]


def _json_text(value: Any) -> str:
    # As text, cast in SQL: a connection without the pool's jsonb codec can append too.
    return _encoder.encode(value).decode("utf-8")


def _entry(row: Any) -> AuditEntry:
    found = None
    if row["object_type"] is not None:
        found = AuditObject(type=row["object_type"], id=row["object_id"])
    return AuditEntry(
        project_id=row["project_id"],
        seq=row["seq"],
        at=row["at"],
        actor=msgspec.convert(row["actor"], Actor),
        action=row["action"],
        object=found,
        ip=row["ip"],
        changes=row["changes"],
        prev_hash=bytes(row["prev_hash"]),
        entry_hash=bytes(row["entry_hash"]),
    )
