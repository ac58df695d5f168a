"""An A2A agent card: where it is published, what registration keeps of it, and what case
generation reads from it when it is all there is of the agent's prompt and tools."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import msgspec

from agentlasso.domain.json_nesting import too_deep

WELL_KNOWN_PATH = "/.well-known/agent-card.json"
_MAX_SKILLS = 200
_MAX_TEXT = 2000


class A2aSkill(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One skill the card lists."""

    id: str = ""
    name: str = ""
    description: str = ""
    examples: list[str] = []
    tags: list[str] = []


class A2aCard(msgspec.Struct, frozen=True, kw_only=True):
    """What registration keeps of a card: who the agent is, where its JSON-RPC endpoint is."""

    name: str
    description: str
    endpoint: str
    protocol_version: str | None
    skills: list[A2aSkill]


class _Interface(msgspec.Struct, frozen=True):
    url: Any = None
    protocolBinding: Any = None
    transport: Any = None


class _Card(msgspec.Struct, frozen=True):
    name: Any = None
    description: Any = None
    url: Any = None
    preferredTransport: Any = None
    protocolVersion: Any = None
    supportedInterfaces: list[_Interface] = []
    additionalInterfaces: list[_Interface] = []
    skills: list[Any] = []


_card_decoder = msgspec.json.Decoder(_Card)


def card_url(url: str) -> str:
    """Where the card of an agent registered at `url` is: the URL itself when it names a JSON
    document, else the well-known path under it."""
    if urlsplit(url).path.endswith(".json"):
        return url
    return url.rstrip("/") + WELL_KNOWN_PATH


def parse_card(content: bytes) -> A2aCard | str:
    """The card, or a sentence saying what is wrong with it."""
    if too_deep(content) is not None:
        return "the agent card is JSON nested too deeply to read"
    try:
        card = _card_decoder.decode(content)
    except msgspec.DecodeError as exc:
        return f"the agent card is not a JSON object an agent card can be: {exc}"
    if not isinstance(card.name, str) or not card.name.strip():
        return "the agent card has no name"
    endpoint = _jsonrpc_endpoint(card)
    if endpoint is None:
        return "the agent card names no JSON-RPC endpoint (url, or a JSONRPC interface)"
    if urlsplit(endpoint).scheme not in ("http", "https"):
        return f"the agent card's endpoint {endpoint[:200]!r} is not an http or https URL"
    return A2aCard(
        name=card.name[:200],
        description=card.description[:_MAX_TEXT] if isinstance(card.description, str) else "",
        endpoint=endpoint,
        protocol_version=card.protocolVersion if isinstance(card.protocolVersion, str) else None,
        skills=[skill for raw in card.skills[:_MAX_SKILLS] if (skill := _skill(raw))],
    )


def _jsonrpc_endpoint(card: _Card) -> str | None:
    """The card's JSON-RPC URL: its `url` when its transport is JSON-RPC (0.3), else the first
    JSONRPC interface it lists (1.0's supportedInterfaces, 0.3's additionalInterfaces)."""
    if isinstance(card.url, str) and card.preferredTransport in (None, "JSONRPC"):
        return card.url
    for interface in [*card.supportedInterfaces, *card.additionalInterfaces]:
        binding = interface.protocolBinding or interface.transport
        if binding == "JSONRPC" and isinstance(interface.url, str):
            return interface.url
    return None


def _skill(raw: Any) -> A2aSkill | None:
    if not isinstance(raw, dict):
        return None
    try:
        skill = msgspec.convert(raw, A2aSkill)
    except msgspec.ValidationError:
        return None
    return msgspec.structs.replace(
        skill,
        description=skill.description[:_MAX_TEXT],
        examples=skill.examples[:20],
        tags=skill.tags[:20],
    )


def card_prompt_and_tools(card: A2aCard) -> tuple[str, list[dict[str, Any]]]:
    """What case generation reads when the card is all there is: a prompt from the card's
    description and skills, and one tool per skill (named by its id, described in words,
    taking a free-text request)."""
    lines = [f"You are {card.name}. {card.description}".strip()]
    for skill in card.skills:
        examples = "; ".join(skill.examples)
        lines.append(f"- {skill.name or skill.id}: {skill.description}" + (
            f" (for example: {examples})" if examples else ""
        ))  # fmt: skip
    tools = [
        {
            "name": skill.id or skill.name,
            "description": skill.description,
            "input_schema": {"type": "object", "properties": {"request": {"type": "string"}}},
        }
        for skill in card.skills
        if skill.id or skill.name
    ]
    return "\n".join(lines), tools
