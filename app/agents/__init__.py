"""The outbound client for agents under test: the address guard, timeouts, retries, replies."""

from app.agents.address_guard import check_agent_url
from app.agents.calls import AgentCallResult, AgentTarget, Attempt
from app.agents.client import AgentClient

__all__ = ["AgentCallResult", "AgentClient", "AgentTarget", "Attempt", "check_agent_url"]
