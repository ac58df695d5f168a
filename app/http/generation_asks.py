"""A generation's request as the service takes it: the API and the pages both ask this way."""

from __future__ import annotations

import msgspec

from agentlasso.domain.case_drafts import ToolSpec
from agentlasso.http.pagination import body_id
from agentlasso.schemas.case_drafts import GenerationCreate
from agentlasso.services import case_generation as generation


def ask_of(data: GenerationCreate) -> generation.GenerationAsk:
    """The service's request; an agent id of an unknown shape names no agent."""
    agent_id = None
    if data.agent_id is not None:
        agent_id = body_id(data.agent_id, "/agent_id", "agent")
    tools = None
    if data.tools is not None:
        tools = tuple(ToolSpec(**msgspec.structs.asdict(tool)) for tool in data.tools)
    return generation.GenerationAsk(
        agent_id=agent_id,
        system_prompt=data.system_prompt,
        tools=tools,
        instruction=data.instruction,
        count=data.count,
    )
