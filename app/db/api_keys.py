"""API keys, stored as a SHA-256 hash with a short prefix for people to recognise."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.scopes import LiveKey, Scope
from agentlasso.domain.web import ApiKeyInfo

_INSERT = """
INSERT INTO api_keys (project_id, prefix, key_hash, scope) VALUES ($1, $2, $3, $4)
"""

_ACTIVE_WITH_PREFIX = """
SELECT id FROM api_keys WHERE prefix = $1 AND revoked_at IS NULL
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
RETURNING id
"""

_LOCK_PROJECT = "SELECT 1 FROM projects WHERE id = $1 FOR UPDATE"
_COUNT_ACTIVE = "SELECT count(*) FROM api_keys WHERE project_id = $1 AND revoked_at IS NULL"

_TOUCH = "UPDATE api_keys SET last_used_at = now() WHERE key_hash = $1"


async def insert_key(
    connection: Connection, project_id: UUID, prefix: str, key_hash: bytes, scope: Scope
) -> None:
    """Store a new key's hash and its scope."""
    await connection.execute(_INSERT, project_id, prefix, key_hash, scope.value)


async def active_key_ids_with_prefix(connection: Connection, prefix: str) -> list[UUID]:
    """Ids of the keys not yet revoked that start with this prefix."""
    return [row["id"] for row in await connection.fetch(_ACTIVE_WITH_PREFIX, prefix)]


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


async def revoke_project_key(executor: Executor, project_id: UUID, key_id: UUID) -> bool:
    """Revoke one of the project's active keys; False when it has no such key."""
    return await executor.fetchval(_REVOKE_IN_PROJECT, project_id, key_id) is not None


async def touch_key(executor: Executor, key_hash: bytes) -> None:
    """Note that a key was just used."""
    await executor.execute(_TOUCH, key_hash)


async def lock_and_count_active(connection: Connection, project_id: UUID) -> int:
    """The project's active keys, its row locked until the transaction ends."""
    await connection.execute(_LOCK_PROJECT, project_id)
    count: int = await connection.fetchval(_COUNT_ACTIVE, project_id)
    return count
