"""Registration of an A2A agent through the address guard (contract section 14): the card is
fetched only from an address the guard allows, and the endpoint the card names must pass the
guard as a registered URL would. Real SDK agents on loopback; the app in process."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from agentlasso.config import Settings
from tests.integration.test_agents import app_client
from tests.support.a2a_agent import running_a2a_agent
from tests.support.assertions import assert_problem


async def register_a2a(
    settings: Settings, api_key: str, base_url: str
) -> tuple[httpx.Response, list[Any]]:
    """Register the agent at base_url as an A2A one: the answer, and the agents then stored."""
    async with app_client(settings, api_key) as http:
        response = await http.post(
            "/api/v1/agents", json={"name": "x", "url": base_url, "protocol": "a2a"}
        )
        stored: list[Any] = (await http.get("/api/v1/agents")).json()["items"]
    return response, stored


async def test_a_guarded_platform_refuses_an_a2a_agent_on_an_internal_address(
    settings: Settings, api_key: str
) -> None:
    guarded = msgspec.structs.replace(settings, allow_private_agents=False)
    with running_a2a_agent() as agent:
        response, stored = await register_a2a(guarded, api_key, agent.base_url)

    problem = assert_problem(response, 422, pointer="/url")
    assert "loopback" in str(problem), problem
    assert agent.paths == [], "nothing was sent to the agent, not even a request for its card"
    assert stored == []


async def test_a_card_naming_an_endpoint_the_guard_refuses_is_not_registered(
    settings: Settings, api_key: str
) -> None:
    elsewhere = "http://agent.invalid/a2a"  # RFC 6761: never resolves
    with running_a2a_agent(endpoint=elsewhere) as agent:
        response, stored = await register_a2a(settings, api_key, agent.base_url)

    detail = str(assert_problem(response, 422, pointer="/url"))
    assert f"names the endpoint {elsewhere}, which is refused" in detail, detail
    assert "does not resolve" in detail, detail
    assert agent.paths == ["/.well-known/agent-card.json"], "only the card was read"
    assert stored == []
