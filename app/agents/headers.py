"""An agent's headers at rest: sealed to the agent, opened only to call it."""

from __future__ import annotations

import logging
from uuid import UUID

import msgspec

from agentlasso.agent_wire.calls import AgentTarget
from agentlasso.domain.agents import Agent
from agentlasso.errors import Conflict
from agentlasso.secrets_box import UnsealError, seal, unseal

log = logging.getLogger("agentlasso.agents")


def target_for(secret_key: bytes, agent: Agent) -> AgentTarget:
    """Where and how to call this agent, its headers unsealed: an a2a agent at the JSON-RPC
    endpoint its card names, an openai_chat one with its model, system prompt and tools."""
    card = agent.a2a_card
    return AgentTarget(
        url=card["endpoint"] if agent.protocol == "a2a" and card else agent.url,
        headers=open_headers(secret_key, agent),
        timeout_s=agent.timeout_s,
        protocol=agent.protocol,
        model=agent.model,
        system_prompt=agent.system_prompt,
        tools=tuple(agent.tools or ()),
    )


def open_headers(secret_key: bytes, agent: Agent) -> dict[str, str]:
    """The agent's headers in the clear; Conflict when the server's key cannot open them."""
    if agent.headers_encrypted is None:
        return {}
    try:
        plaintext = unseal(secret_key, agent.headers_encrypted, agent.id.bytes)
    except UnsealError:
        log.warning("agent %s: its headers cannot be opened with the current secret key", agent.id)
        raise Conflict(
            "This agent's headers were stored under another server secret key: "
            "set them again with PATCH."
        ) from None
    headers: dict[str, str] = msgspec.json.decode(plaintext, type=dict[str, str])
    return headers


def seal_headers(secret_key: bytes, agent_id: UUID, headers: dict[str, str]) -> bytes | None:
    """The headers as one sealed JSON object bound to the agent; None when there are none."""
    if not headers:
        return None
    return seal(secret_key, msgspec.json.encode(headers), agent_id.bytes)
