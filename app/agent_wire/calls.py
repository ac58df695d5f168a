"""What the platform asks of an agent call, and what the call gave back."""

from __future__ import annotations

from typing import Any

import msgspec

from agentlasso.domain.agent_calls import AgentCall, Attempt
from agentlasso.domain.case_results import Reported
from agentlasso.domain.conversation_play import TurnAnswer


class AgentTarget(msgspec.Struct, frozen=True):
    """The agent to call: its URL, its headers (already decrypted), one attempt's timeout, and
    the protocol it speaks with what that protocol sends besides the case (section 14)."""

    url: str
    headers: dict[str, str]
    timeout_s: float
    # agentlasso (section 3), openai_chat or a2a; for a2a, `url` is the card's JSON-RPC endpoint.
    protocol: str = "agentlasso"
    # What an openai_chat request carries besides the conversation: `model`, the system prompt
    # first, and the agent's declared tools as function tools.
    model: str | None = None
    system_prompt: str | None = None
    tools: tuple[dict[str, Any], ...] = ()


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
    # The W3C trace id the call's `traceparent` carried (section 14); None: never sent.
    agent_trace_id: str | None = None

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
            agent_trace_id=self.agent_trace_id,
        )  # fmt: skip
