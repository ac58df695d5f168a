"""Agents on the wire: registering one (headers write-only), and an agent as shown."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from agentlasso.domain.agent_headers import HEADER_NAME, HEADER_VALUE, RESERVED_HEADERS
from agentlasso.domain.test_cases import CaseInput

# What the address guard can take, as a schema can say it: http(s), a host of letters, digits,
# dots and hyphens, no user name or password. That the host resolves to a public address is
# checked at registration (a 422 naming `url`): no schema knows DNS.
AGENT_URL_PATTERN = (
    r"^https?://[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*(?::[0-9]{1,5})?(?:[/?#][!-~]*)?$"
)


def _any_case(word: str) -> str:
    """A pattern matching the word in any letter case (JSON Schema patterns have no flags)."""
    return "".join(f"[{char.upper()}{char.lower()}]" if char.isalpha() else char for char in word)


_RESERVED = "|".join(_any_case(name) for name in sorted(RESERVED_HEADERS))
HeaderName = Annotated[
    str,
    msgspec.Meta(
        extra_json_schema={
            "pattern": f"^{HEADER_NAME.pattern}$",
            "not": {"pattern": f"^(?:{_RESERVED})$"},
            "description": "A header name; those AgentLasso sets itself are refused, and two "
            "names differing only in case are one name given twice.",
        }
    ),
]
HeaderValue = Annotated[
    str, msgspec.Meta(max_length=8192, extra_json_schema={"pattern": f"^{HEADER_VALUE.pattern}$"})
]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Url = Annotated[
    str,
    msgspec.Meta(min_length=1, max_length=2048, extra_json_schema={"pattern": AGENT_URL_PATTERN}),
]
Headers = Annotated[dict[HeaderName, HeaderValue], msgspec.Meta(max_length=64)]
TimeoutS = Annotated[float, msgspec.Meta(ge=1, le=300)]
MaxConcurrency = Annotated[int, msgspec.Meta(ge=1, le=10_000)]
SystemPrompt = Annotated[str, msgspec.Meta(max_length=200_000)]
Tools = Annotated[list[dict[str, Any]], msgspec.Meta(max_length=1000)]
# How the platform talks to the agent (contract section 14).
Protocol = Literal["agentlasso", "openai_chat", "a2a"]
Model = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class A2aSkill(msgspec.Struct, kw_only=True):
    """A skill an A2A agent's card lists."""

    id: str = ""
    name: str = ""
    description: str = ""
    examples: list[str] = []
    tags: list[str] = []


class A2aCard(msgspec.Struct, kw_only=True):
    """What registration read of an A2A agent's card: the agent, its JSON-RPC endpoint (where
    calls go), and its skills."""

    name: str
    description: str
    endpoint: str
    protocol_version: str | None
    skills: list[A2aSkill]


class AgentCreate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A new agent; `headers` are write-only."""

    name: Name
    url: Url
    headers: Headers | None = None
    timeout_s: TimeoutS = 30.0
    max_concurrency: MaxConcurrency | None = None
    system_prompt: SystemPrompt | None = None
    tools: Tools | None = None
    # agentlasso: POST url (section 3); openai_chat: url is the chat-completions URL and
    # `model` the model it is asked for; a2a: url is the agent card or the agent's base URL.
    protocol: Protocol = "agentlasso"
    model: Model | None = None


class AgentUpdate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Fields to change; absent ones are kept, null clears, `headers` are replaced whole."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    url: Url | msgspec.UnsetType = msgspec.UNSET
    headers: Headers | msgspec.UnsetType | None = msgspec.UNSET
    timeout_s: TimeoutS | msgspec.UnsetType = msgspec.UNSET
    max_concurrency: MaxConcurrency | msgspec.UnsetType | None = msgspec.UNSET
    system_prompt: SystemPrompt | msgspec.UnsetType | None = msgspec.UNSET
    tools: Tools | msgspec.UnsetType | None = msgspec.UNSET
    protocol: Protocol | msgspec.UnsetType = msgspec.UNSET
    model: Model | msgspec.UnsetType | None = msgspec.UNSET


class Agent(msgspec.Struct, kw_only=True):
    """An agent as the API shows it: header names, never their values."""

    id: UUID
    name: str
    url: str
    header_names: list[str]
    timeout_s: float
    max_concurrency: int | None
    system_prompt: str | None
    tools: list[dict[str, Any]] | None
    protocol: Protocol
    model: str | None
    a2a_card: A2aCard | None
    created_at: datetime
    updated_at: datetime


class AgentPage(msgspec.Struct, kw_only=True):
    """A page of agents."""

    items: list[Agent]
    next_cursor: str | None


class InvokeRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One free try of an agent."""

    input: CaseInput
    context: dict[str, Any] | None = None


class InvokeResult(msgspec.Struct, kw_only=True):
    """What the agent answered, as it sent it; `output` and `tool_calls` absent when it did not."""

    output: Any = msgspec.UNSET
    tool_calls: Any = msgspec.UNSET
    error: str | None
    attempts: int
    latency_ms: int
    # The W3C trace id the call carried (section 14); absent when no request was sent.
    agent_trace_id: str | msgspec.UnsetType = msgspec.UNSET
