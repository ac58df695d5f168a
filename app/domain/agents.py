"""A registered agent under test, as stored (its headers sealed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec


class Agent(msgspec.Struct, frozen=True, kw_only=True):
    """An agent; field names are the table's column names."""

    id: UUID
    seq: int
    name: str
    url: str
    # The headers' JSON object sealed with the agent id as associated data; None: no headers.
    headers_encrypted: bytes | None
    # Names only, for display: the values never leave headers_encrypted.
    header_names: list[str]
    timeout_s: float
    # Calls in flight to this agent across every worker; None: no limit of its own.
    max_concurrency: int | None
    system_prompt: str | None
    tools: list[dict[str, Any]] | None
    # agentlasso, openai_chat or a2a (contract section 14).
    protocol: str = "agentlasso"
    # The model an openai_chat endpoint is asked for.
    model: str | None = None
    # An a2a agent's card as registration read it: name, description, endpoint, skills.
    a2a_card: dict[str, Any] | None = None
    created_at: datetime
    updated_at: datetime
