"""Registration's check that an agent's endpoint speaks its protocol (contract section 14): an
A2A agent's card is fetched and validated through the address guard, and the endpoint it names
must pass the guard too; an OpenAI-compatible endpoint must answer a minimal request. What is
wrong is said in words, as a 422 naming `url`."""

from __future__ import annotations

from typing import Any, NoReturn

import msgspec

from agentlasso.agent_wire.a2a_card import card_url, parse_card
from agentlasso.agents import AgentTarget, check_agent_url
from agentlasso.errors import FieldError, InvalidInput
from agentlasso.services.platform import Platform

# The endpoint check's own bound: registration waits for it.
_CHECK_TIMEOUT_S = 10.0
_PROBE_INPUT = "Reply with OK."


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    """The agent as registration would store it, with its headers in the clear."""

    protocol: str
    url: str
    headers: dict[str, str]
    timeout_s: float
    model: str | None = None
    system_prompt: str | None = None


async def checked_endpoint(platform: Platform, endpoint: Endpoint) -> dict[str, Any] | None:
    """The A2A card to store for an a2a agent (None for the others), once the endpoint has
    answered as its protocol says; InvalidInput naming `url` (or `model`) when it has not."""
    if endpoint.protocol == "a2a":
        return await _a2a_card(platform, endpoint)
    if endpoint.protocol == "openai_chat":
        await _probe_chat(platform, endpoint)
    return None


async def _a2a_card(platform: Platform, endpoint: Endpoint) -> dict[str, Any]:
    """The agent's card, read, validated, and its endpoint passed through the guard."""
    where = card_url(endpoint.url)
    timeout_s = min(endpoint.timeout_s, _CHECK_TIMEOUT_S)
    content = await platform.agent_client.fetch(where, endpoint.headers, timeout_s)
    if isinstance(content, str):
        _refuse(f"The agent card at {where} could not be read: {content}.")
    card = parse_card(content)
    if isinstance(card, str):
        _refuse(f"The document at {where} is not a usable agent card: {card}.")
    allow_private = platform.settings.allow_private_agents
    reason = await check_agent_url(card.endpoint, allow_private=allow_private)
    if reason:
        _refuse(f"The agent card names the endpoint {card.endpoint}, which is refused: {reason}")
    return msgspec.to_builtins(card)  # type: ignore[no-any-return]


async def _probe_chat(platform: Platform, endpoint: Endpoint) -> None:
    """One minimal chat completion, which must come back as one."""
    if not endpoint.model:
        detail = "An openai_chat agent needs the `model` its endpoint is asked for."
        raise InvalidInput(detail, [FieldError(pointer="/model", detail=detail)])
    target = AgentTarget(
        endpoint.url, endpoint.headers, min(endpoint.timeout_s, _CHECK_TIMEOUT_S),
        protocol="openai_chat", model=endpoint.model, system_prompt=endpoint.system_prompt,
    )  # fmt: skip
    body = {"input": _PROBE_INPUT, "source": "agentlasso-sandbox", "context": {}}
    result = await platform.agent_client.call(target, body)
    if result.error:
        _refuse(f"The endpoint did not answer a chat completion: {result.error}.")


def _refuse(detail: str) -> NoReturn:
    raise InvalidInput(
        "The agent's endpoint cannot be used as given.",
        [FieldError(pointer="/url", detail=detail)],
    )
