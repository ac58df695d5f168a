"""The outbound client for agents under test: the address guard, timeouts, retries, replies."""

from app.agents.address_guard import check_agent_url
from app.agents.calls import AgentCallResult, AgentTarget
from app.agents.client import AgentClient
from app.domain.agent_calls import Attempt

__all__ = ["AgentCallResult", "AgentClient", "AgentTarget", "Attempt", "check_agent_url"]
