"""API keys, stored as a SHA-256 hash with a short prefix for people to recognise."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.scopes import LiveKey, Scope
from agentlasso.domain.web import ApiKeyInfo

_INSERT = """
INSERT INTO api_keys (project_id, prefix, key_hash, scope) VALUES ($1, $2, $3, $4) RETURNING id
"""

_ACTIVE_WITH_PREFIX = """
SELECT id, project_id FROM api_keys WHERE prefix = $1 AND revoked_at IS NULL
"""

# A few rows at most: the prefix's 48 random bits tell keys apart.
_WITH_PREFIX = """
SELECT id, project_id, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE prefix = $1 LIMIT 2
"""

_REVOKE = "UPDATE api_keys SET revoked_at = now() WHERE id = $1"

_ACTIVE_BY_HASH = """
SELECT id AS key_id, project_id, scope FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL
"""

_LIST = """
SELECT id, prefix, scope, created_at, last_used_at, revoked_at FROM api_keys
WHERE project_id = $1 ORDER BY revoked_at IS NOT NULL, created_at DESC
"""

_REVOKE_IN_PROJECT = """
UPDATE api_keys SET revoked_at = now()
WHERE project_id = $1 AND id = $2 AND revoked_at IS NULL
RETURNING prefix
"""

_LOCK_PROJECT = "SELECT 1 FROM projects WHERE id = $1 FOR UPDATE"
_COUNT_ACTIVE = "SELECT count(*) FROM api_keys WHERE project_id = $1 AND revoked_at IS NULL"

_TOUCH = "UPDATE api_keys SET last_used_at = now() WHERE key_hash = $1"


async def insert_key(
    connection: Connection, project_id: UUID, prefix: str, key_hash: bytes, scope: Scope
) -> UUID:
    """Store a new key's hash and its scope; its id."""
    key_id: UUID = await connection.fetchval(_INSERT, project_id, prefix, key_hash, scope.value)
    return key_id


async def active_keys_with_prefix(connection: Connection, prefix: str) -> list[tuple[UUID, UUID]]:
    """(key id, project id) of the keys not yet revoked that start with this prefix."""
    rows = await connection.fetch(_ACTIVE_WITH_PREFIX, prefix)
    return [(row["id"], row["project_id"]) for row in rows]


async def key_with_prefix(executor: Executor, prefix: str) -> tuple[UUID, UUID, bool] | None:
    """(key id, project id, revoked) of the one key, live or revoked, with this prefix; None
    when there is none, or more than one."""
    rows = await executor.fetch(_WITH_PREFIX, prefix)
    return (rows[0]["id"], rows[0]["project_id"], rows[0]["revoked"]) if len(rows) == 1 else None


async def revoke_key(connection: Connection, key_id: UUID) -> None:
    """Revoke a key; it stops working on the next request."""
    await connection.execute(_REVOKE, key_id)


async def active_key(executor: Executor, key_hash: bytes) -> LiveKey | None:
    """An active key's id, project and scope, or None."""
    row = await executor.fetchrow(_ACTIVE_BY_HASH, key_hash)
    if row is None:
        return None
    return LiveKey(key_id=row["key_id"], project_id=row["project_id"], scope=Scope(row["scope"]))


async def list_keys(executor: Executor, project_id: UUID) -> list[ApiKeyInfo]:
    """The project's keys, active ones first, newest first."""
    rows = await executor.fetch(_LIST, project_id)
    return [ApiKeyInfo(**{**row, "scope": Scope(row["scope"])}) for row in rows]


async def revoke_project_key(executor: Executor, project_id: UUID, key_id: UUID) -> str | None:
    """Revoke one of the project's active keys; its prefix, None when it has no such key."""
    prefix: str | None = await executor.fetchval(_REVOKE_IN_PROJECT, project_id, key_id)
    return prefix


async def touch_key(executor: Executor, key_hash: bytes) -> None:
    """Note that a key was just used."""
    await executor.execute(_TOUCH, key_hash)


async def lock_and_count_active(connection: Connection, project_id: UUID) -> int:
    """The project's active keys, its row locked until the transaction ends."""
    await connection.execute(_LOCK_PROJECT, project_id)
    count: int = await connection.fetchval(_COUNT_ACTIVE, project_id)
    return count
