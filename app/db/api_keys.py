"""API keys, stored as a SHA-256 hash with a short prefix for people to recognise."""

from __future__ import annotations

from uuid import UUID

from app.db.pool import Connection, Executor

_INSERT = "INSERT INTO api_keys (project_id, prefix, key_hash) VALUES ($1, $2, $3)"

_PROJECT_FOR_HASH = """
SELECT project_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL
"""

_ACTIVE_WITH_PREFIX = """
SELECT id FROM api_keys WHERE prefix = $1 AND revoked_at IS NULL
"""

_REVOKE = "UPDATE api_keys SET revoked_at = now() WHERE id = $1"


async def insert_key(
    connection: Connection, project_id: UUID, prefix: str, key_hash: bytes
) -> None:
    """Store a new key's hash."""
    await connection.execute(_INSERT, project_id, prefix, key_hash)


async def project_for_key_hash(executor: Executor, key_hash: bytes) -> UUID | None:
    """The project an active key belongs to, or None."""
    project_id: UUID | None = await executor.fetchval(_PROJECT_FOR_HASH, key_hash)
    return project_id


async def active_key_ids_with_prefix(connection: Connection, prefix: str) -> list[UUID]:
    """Ids of the keys not yet revoked that start with this prefix."""
    return [row["id"] for row in await connection.fetch(_ACTIVE_WITH_PREFIX, prefix)]


async def revoke_key(connection: Connection, key_id: UUID) -> None:
    """Revoke a key; it stops working on the next request."""
    await connection.execute(_REVOKE, key_id)
