"""What the platform asks of an agent call, and what the call gave back."""

from __future__ import annotations

from typing import Any

import msgspec

from agentlasso.domain.agent_calls import AgentCall, Attempt
from agentlasso.domain.case_results import Reported
from agentlasso.domain.conversation_play import TurnAnswer


class AgentTarget(msgspec.Struct, frozen=True):
    """The agent to call: its URL, its headers (already decrypted) and one attempt's timeout."""

    url: str
    headers: dict[str, str]
    timeout_s: float


class AgentCallResult(msgspec.Struct, frozen=True):
    """The agent's raw answer (UNSET where a key was missing), or the sentence saying why not."""

    actual_output: Any
    actual_tool_calls: Any
    error: str | None
    attempts: tuple[Attempt, ...]
    latency_ms: int
    # How the call ended in a word (ok, timeout, connection, http_status, invalid_reply,
    # refused): a bounded label for metrics, never shown to a user.
    outcome: str = "ok"
    # The agent answered `"end": true`: it ends the conversation (contract section 13).
    end: bool = False

    def call_record(self) -> AgentCall:
        """What a stored result keeps of this call."""
        return AgentCall(latency_ms=self.latency_ms, attempts=self.attempts, error=self.error)

    def reported(self) -> Reported:
        """What the agent answered, as a result keeps it (UNSET: not in the answer)."""
        return Reported(
            actual_output=self.actual_output,
            actual_tool_calls=self.actual_tool_calls,
            latency_ms=self.latency_ms,
        )

    def turn_answer(self) -> TurnAnswer:
        """This call as one turn's answer in a conversation."""
        return TurnAnswer(
            actual_output=self.actual_output, actual_tool_calls=self.actual_tool_calls,
            latency_ms=self.latency_ms, error=self.error, end=self.end,
        )  # fmt: skip
