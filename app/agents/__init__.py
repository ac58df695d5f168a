"""The outbound client for agents under test: the address guard, timeouts, retries, replies."""

from agentlasso.agent_wire.calls import AgentCallResult, AgentTarget
from agentlasso.agents.address_guard import check_agent_url
from agentlasso.agents.caller import AgentClient
from agentlasso.domain.agent_calls import Attempt

__all__ = ["AgentCallResult", "AgentClient", "AgentTarget", "Attempt", "check_agent_url"]
