"""Projects: the tenant that owns everything."""

from __future__ import annotations

from uuid import UUID

from app.db.pool import Connection

_UPSERT_BY_NAME = """
INSERT INTO projects (name) VALUES ($1)
ON CONFLICT ON CONSTRAINT projects_name_key DO UPDATE SET name = EXCLUDED.name
RETURNING id
"""


async def ensure_project(connection: Connection, name: str) -> UUID:
    """The id of the project with this name, created if missing."""
    project_id: UUID = await connection.fetchval(_UPSERT_BY_NAME, name)
    return project_id
