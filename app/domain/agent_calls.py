"""What the platform's call to an agent under test did, as a result keeps it."""

from __future__ import annotations

import msgspec


class Attempt(msgspec.Struct, frozen=True):
    """One try: the HTTP status (None when no answer came), how long it took, what went wrong."""

    number: int
    status: int | None
    latency_ms: int
    error: str | None


class AgentCall(msgspec.Struct, frozen=True, kw_only=True):
    """The call behind a server-mode result: its latency, every attempt, and its error if any."""

    latency_ms: int | None
    attempts: tuple[Attempt, ...]
    error: str | None
