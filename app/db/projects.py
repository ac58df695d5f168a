"""Projects: the tenant that owns everything."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.judging import ProjectJudge

# A new project goes into the organisation of its own name (made if missing); one that exists
# stays where it is.
_UPSERT_BY_NAME = """
WITH organisation AS (
    INSERT INTO organisations (name) VALUES ($1)
    ON CONFLICT ON CONSTRAINT organisations_name_key DO UPDATE SET name = EXCLUDED.name
    RETURNING id
)
INSERT INTO projects (name, organisation_id) SELECT $1, id FROM organisation
ON CONFLICT ON CONSTRAINT projects_name_key DO UPDATE SET name = EXCLUDED.name
RETURNING id
"""


async def ensure_project(connection: Connection, name: str) -> UUID:
    """The id of the project with this name, created (in an organisation of the same name)
    if missing."""
    project_id: UUID = await connection.fetchval(_UPSERT_BY_NAME, name)
    return project_id


_BY_NAME = "SELECT id FROM projects WHERE name = $1"


async def project_named(executor: Executor, name: str) -> UUID | None:
    """The id of the project with this name, if there is one."""
    project_id: UUID | None = await executor.fetchval(_BY_NAME, name)
    return project_id


_JUDGE = """
SELECT judge_key_encrypted, judge_model, doubted_judge_not_graded FROM projects WHERE id = $1
"""
_SET_JUDGE = """
UPDATE projects SET judge_key_encrypted = $2, judge_model = $3, doubted_judge_not_graded = $4
WHERE id = $1
"""


async def judge_settings(executor: Executor, project_id: UUID) -> ProjectJudge:
    """The project's own judge key (sealed) and model; empty when it has none."""
    row = await executor.fetchrow(_JUDGE, project_id)
    if row is None:
        return ProjectJudge()
    return ProjectJudge(
        key_encrypted=row["judge_key_encrypted"],
        model=row["judge_model"],
        doubted_not_graded=row["doubted_judge_not_graded"],
    )


async def set_judge_settings(executor: Executor, project_id: UUID, judge: ProjectJudge) -> None:
    """Store the project's own judge key (sealed) and model."""
    await executor.execute(
        _SET_JUDGE, project_id, judge.key_encrypted, judge.model, judge.doubted_not_graded
    )


# Only one of the project's own agents can be its default.
_SET_DEFAULT_AGENT = """
UPDATE projects p SET default_agent_id = $2
WHERE p.id = $1 AND ($2::uuid IS NULL OR EXISTS (
    SELECT 1 FROM agents a WHERE a.id = $2 AND a.project_id = $1))
RETURNING p.id
"""


async def set_default_agent(executor: Executor, project_id: UUID, agent_id: UUID | None) -> bool:
    """Make one of the project's agents its default (None: no default); False if not its own."""
    return await executor.fetchval(_SET_DEFAULT_AGENT, project_id, agent_id) is not None
