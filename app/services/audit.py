"""The audit log: one entry per change, written in the change's own transaction, never edited.

What it records (and what it does not, on purpose):
- keys created and revoked; agents created, changed (the names of the fields that changed;
  `agent.headers_changed` when its headers did, with their names only) and deleted; the judge's
  key set or removed (never the key) and its model changed; datasets and cases deleted; the
  trace retention changed; web sign-ins.
- A failed sign-in is recorded in the project whose key the text names by its prefix (a revoked
  key, or the right prefix with the wrong rest): that project's admins are the ones who should
  see it. Text naming no key of ours has no project to go to: it goes to the server's log only,
  so that nobody can fill a table from the sign-in form.
- Runs started are not recorded: a busy CI starts thousands, and each run is its own record.
"""

from __future__ import annotations

import logging
from uuid import UUID

import msgspec

from agentlasso.db import audit_log as audit_rows
from agentlasso.db import projects as project_rows
from agentlasso.db.pool import Connection, Executor, connect
from agentlasso.domain.audit import (
    AuditAction,
    AuditEntry,
    AuditEvent,
    AuditFilter,
    AuditObject,
    BrokenLink,
    Caller,
    ChangeValue,
    follow_chain,
)
from agentlasso.errors import NotFound
from agentlasso.services.platform import Platform

log = logging.getLogger("agentlasso.audit")
# The chain is read this many entries at a time when it is verified.
VERIFY_BATCH = 1000


def about(object_type: str, object_id: UUID | str) -> AuditObject:
    """The object an entry is about."""
    return AuditObject(type=object_type, id=str(object_id))


async def record(
    connection: Connection,
    project_id: UUID,
    caller: Caller,
    action: AuditAction,
    subject: AuditObject | None = None,
    **changes: ChangeValue,
) -> None:
    """Append an entry in the caller's open transaction: the last thing it does, since the
    project's log stays locked until the transaction ends."""
    event = AuditEvent(action=action, object=subject, changes=changes)
    await audit_rows.append(connection, project_id, caller, event)


async def list_entries(
    platform: Platform, project_id: UUID, which: AuditFilter, before_seq: int | None, limit: int
) -> list[AuditEntry]:
    """A page of the project's log, newest first."""
    return await audit_rows.list_entries(platform.pool, project_id, which, before_seq, limit)


class ChainCheck(msgspec.Struct, frozen=True, kw_only=True):
    """What verifying a project's log found: the last entry that holds (0: none), its hash, and
    the first entry that breaks the chain, if one does."""

    held_seq: int
    held_hash: bytes | None
    broken: BrokenLink | None


async def verify_chain(executor: Executor, project_id: UUID) -> ChainCheck:
    """Walk the project's log oldest first, to the first entry edited, removed or put out of
    place (none when the whole chain holds)."""
    held: AuditEntry | None = None
    while True:
        after = 0 if held is None else held.seq
        batch = await audit_rows.entries_in_chain_order(executor, project_id, after, VERIFY_BATCH)
        held, broken = follow_chain(batch, held)
        if broken is not None or len(batch) < VERIFY_BATCH:
            return ChainCheck(
                held_seq=0 if held is None else held.seq,
                held_hash=None if held is None else held.entry_hash,
                broken=broken,
            )


async def verify_project_log(database_url: str, project_name: str) -> ChainCheck:
    """Verify the log of the project with this name (`agentlasso audit verify`)."""
    connection = await connect(database_url)
    try:
        project_id = await project_rows.project_named(connection, project_name)
        if project_id is None:
            raise NotFound(f"No project is called {project_name!r}.")
        return await verify_chain(connection, project_id)
    finally:
        await connection.close()
