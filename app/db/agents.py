"""Registered agents, always read and written inside one project."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from app.db.pool import Connection, Executor

_COLUMNS = (
    "id, seq, name, url, headers_encrypted, header_names, timeout_s, max_concurrency,"
    " system_prompt, tools, created_at, updated_at"
)

_INSERT = f"""
INSERT INTO agents (id, project_id, name, url, headers_encrypted, header_names, timeout_s,
                    max_concurrency, system_prompt, tools)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING {_COLUMNS}
"""

_GET = f"SELECT {_COLUMNS} FROM agents WHERE project_id = $1 AND id = $2"

_LIST = f"""
SELECT {_COLUMNS} FROM agents
WHERE project_id = $1 AND seq > $2
ORDER BY seq
LIMIT $3
"""

_UPDATE = f"""
UPDATE agents
SET name = $3, url = $4, headers_encrypted = $5, header_names = $6, timeout_s = $7,
    max_concurrency = $8, system_prompt = $9, tools = $10, updated_at = now()
WHERE project_id = $1 AND id = $2
RETURNING {_COLUMNS}
"""

_DELETE = "DELETE FROM agents WHERE project_id = $1 AND id = $2"


class AgentValues(msgspec.Struct, frozen=True, kw_only=True):
    """Every stored field of an agent but its identity and timestamps."""

    name: str
    url: str
    headers_encrypted: bytes | None
    header_names: list[str]
    timeout_s: float
    max_concurrency: int | None
    system_prompt: str | None
    tools: list[dict[str, Any]] | None


def values_of(row: asyncpg.Record) -> AgentValues:
    """The stored fields of a row, to change some and write them back."""
    return AgentValues(**{field: row[field] for field in AgentValues.__struct_fields__})


async def insert_agent(
    executor: Executor, project_id: UUID, agent_id: UUID, values: AgentValues
) -> asyncpg.Record:
    """Create an agent and return its row."""
    row: asyncpg.Record | None = await executor.fetchrow(
        _INSERT, agent_id, project_id, *msgspec.structs.astuple(values)
    )
    assert row is not None, "RETURNING always yields the row written"
    return row


async def get_agent(executor: Executor, project_id: UUID, agent_id: UUID) -> asyncpg.Record | None:
    """The agent's row, or None when it is not in this project."""
    row: asyncpg.Record | None = await executor.fetchrow(_GET, project_id, agent_id)
    return row


async def list_agents(
    executor: Executor, project_id: UUID, after_seq: int, limit: int
) -> list[asyncpg.Record]:
    """One page of the project's agents, oldest first."""
    return list(await executor.fetch(_LIST, project_id, after_seq, limit))


async def update_agent(
    connection: Connection, project_id: UUID, agent_id: UUID, values: AgentValues
) -> asyncpg.Record | None:
    """Overwrite the agent's fields; None when it is not in this project."""
    row: asyncpg.Record | None = await connection.fetchrow(
        _UPDATE, project_id, agent_id, *msgspec.structs.astuple(values)
    )
    return row


async def delete_agent(executor: Executor, project_id: UUID, agent_id: UUID) -> bool:
    """Delete the agent; False when it is not in this project."""
    status: str = await executor.execute(_DELETE, project_id, agent_id)
    return status == "DELETE 1"
