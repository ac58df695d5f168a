"""/api/v1/agents: register, read, update, delete, and try an agent."""

from __future__ import annotations

import msgspec
from litestar import Controller, delete, get, patch, post
from litestar.params import FromPath, JSONBody

from agentlasso.domain import agents as domain
from agentlasso.http.auth import CallerDep, PlatformDep, ProjectId
from agentlasso.http.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    decode_cursor,
    next_cursor,
    parse_id,
)
from agentlasso.schemas.agents import (
    Agent,
    AgentCreate,
    AgentPage,
    AgentUpdate,
    InvokeRequest,
    InvokeResult,
)
from agentlasso.services import agents as service


def agent_out(agent: domain.Agent) -> Agent:
    """The API shape of an agent: header names, never their values."""
    return msgspec.convert(agent, Agent, from_attributes=True)


class AgentController(Controller):
    """Agents of the caller's project."""

    path = "/agents"
    tags = ("agents",)

    @post(operation_id="createAgent")
    async def create(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        data: JSONBody[AgentCreate],
    ) -> Agent:
        """Register an agent (its URL must pass the address guard)."""
        spec = service.AgentSpec(**msgspec.structs.asdict(data))
        agent = await service.create_agent(platform, project_id, spec, caller)
        return agent_out(agent)

    @get(operation_id="listAgents")
    async def list(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> AgentPage:
        """The project's agents, oldest first."""
        agents = await service.list_agents(platform, project_id, decode_cursor(cursor), limit + 1)
        return AgentPage(
            items=[agent_out(agent) for agent in agents[:limit]],
            next_cursor=next_cursor([agent.seq for agent in agents], limit),
        )

    @get("/{agent_id:str}", operation_id="getAgent")
    async def read(
        self, platform: PlatformDep, project_id: ProjectId, agent_id: FromPath[str]
    ) -> Agent:
        """One agent."""
        agent = await service.get_agent(platform, project_id, parse_id(agent_id, "agent"))
        return agent_out(agent)

    @patch("/{agent_id:str}", operation_id="updateAgent")
    async def update(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        agent_id: FromPath[str],
        data: JSONBody[AgentUpdate],
    ) -> Agent:
        """Change an agent; given headers replace the old ones, null removes them."""
        changes = {
            field: value
            for field in data.__struct_fields__
            if (value := getattr(data, field)) is not msgspec.UNSET
        }
        agent = await service.update_agent(
            platform, project_id, parse_id(agent_id, "agent"), changes, caller
        )
        return agent_out(agent)

    @delete("/{agent_id:str}", operation_id="deleteAgent")
    async def remove(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        agent_id: FromPath[str],
    ) -> None:
        """Delete an agent."""
        await service.delete_agent(platform, project_id, parse_id(agent_id, "agent"), caller)

    @post("/{agent_id:str}/invoke", operation_id="invokeAgent", status_code=200)
    async def invoke(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        agent_id: FromPath[str],
        data: JSONBody[InvokeRequest],
    ) -> InvokeResult:
        """Call the agent once; a failed call is a 200 whose `error` says why."""
        result = await service.invoke_agent(
            platform,
            project_id,
            parse_id(agent_id, "agent"),
            data.input,
            data.context,
        )
        return InvokeResult(
            output=result.actual_output,
            tool_calls=result.actual_tool_calls,
            error=result.error,
            attempts=len(result.attempts),
            latency_ms=result.latency_ms,
            agent_trace_id=result.agent_trace_id or msgspec.UNSET,
        )
