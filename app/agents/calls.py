"""What the platform asks of an agent call, and what the call gave back."""

from __future__ import annotations

from typing import Any

import msgspec


class AgentTarget(msgspec.Struct, frozen=True):
    """The agent to call: its URL, its headers (already decrypted) and one attempt's timeout."""

    url: str
    headers: dict[str, str]
    timeout_s: float


class Attempt(msgspec.Struct, frozen=True):
    """One try: the HTTP status (None when no answer came), how long it took, what went wrong."""

    number: int
    status: int | None
    latency_ms: int
    error: str | None


class AgentCallResult(msgspec.Struct, frozen=True):
    """The agent's raw answer (UNSET where a key was missing), or the sentence saying why not."""

    actual_output: Any
    actual_tool_calls: Any
    error: str | None
    attempts: tuple[Attempt, ...]
    latency_ms: int
