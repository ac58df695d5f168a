"""Registered agents, always read and written inside one project."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.agents import Agent

_COLUMNS = ", ".join(Agent.__struct_fields__)

_INSERT = f"""
INSERT INTO agents (id, project_id, name, url, headers_encrypted, header_names, timeout_s,
                    max_concurrency, system_prompt, tools, protocol, model, a2a_card)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
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
    max_concurrency = $8, system_prompt = $9, tools = $10, protocol = $11, model = $12,
    a2a_card = $13, updated_at = now()
WHERE project_id = $1 AND id = $2
RETURNING {_COLUMNS}
"""

# The project's chosen agent if it chose one, else its first.
_DEFAULT = f"""
SELECT {", ".join(f"a.{name}" for name in Agent.__struct_fields__)}
FROM agents a
JOIN projects p ON p.id = a.project_id
WHERE a.project_id = $1
ORDER BY a.id IS NOT DISTINCT FROM p.default_agent_id DESC, a.seq
LIMIT 1
"""

_DELETE = "DELETE FROM agents WHERE project_id = $1 AND id = $2 RETURNING name"


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
    protocol: str = "agentlasso"
    model: str | None = None
    a2a_card: dict[str, Any] | None = None


def values_of(agent: Agent) -> AgentValues:
    """The stored fields of an agent, to change some and write them back."""
    return AgentValues(**{field: getattr(agent, field) for field in AgentValues.__struct_fields__})


async def insert_agent(
    executor: Executor, project_id: UUID, agent_id: UUID, values: AgentValues
) -> Agent:
    """Create an agent and return it."""
    row = await executor.fetchrow(_INSERT, agent_id, project_id, *msgspec.structs.astuple(values))
    assert row is not None, "RETURNING always yields the row written"
    return Agent(**row)


async def get_agent(executor: Executor, project_id: UUID, agent_id: UUID) -> Agent | None:
    """The agent, or None when it is not in this project."""
    row = await executor.fetchrow(_GET, project_id, agent_id)
    return None if row is None else Agent(**row)


async def list_agents(
    executor: Executor, project_id: UUID, after_seq: int, limit: int
) -> list[Agent]:
    """One page of the project's agents, oldest first."""
    return [Agent(**row) for row in await executor.fetch(_LIST, project_id, after_seq, limit)]


async def default_agent(executor: Executor, project_id: UUID) -> Agent | None:
    """The agent Preview and Send test message call: the one the project chose, else its
    first; None when it has registered none."""
    row = await executor.fetchrow(_DEFAULT, project_id)
    return None if row is None else Agent(**row)


async def update_agent(
    connection: Connection, project_id: UUID, agent_id: UUID, values: AgentValues
) -> Agent | None:
    """Overwrite the agent's fields; None when it is not in this project."""
    row = await connection.fetchrow(_UPDATE, project_id, agent_id, *msgspec.structs.astuple(values))
    return None if row is None else Agent(**row)


async def delete_agent(executor: Executor, project_id: UUID, agent_id: UUID) -> str | None:
    """Delete the agent; its name, None when it is not in this project."""
    name: str | None = await executor.fetchval(_DELETE, project_id, agent_id)
    return name
