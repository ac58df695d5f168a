"""The simulated user's next turn on the wire: what a CI client asks, and the answer."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from agentlasso.domain.conversations import MAX_SCRIPTED_TURNS, MAX_SIMULATED_TURNS

# A transcript of the longest conversation: every scripted and simulated turn, each answered.
MAX_TRANSCRIPT_MESSAGES = 2 * (MAX_SCRIPTED_TURNS + MAX_SIMULATED_TURNS)


class TranscriptMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One message of the conversation so far, as the client played it."""

    role: Literal["user", "assistant"]
    # The message: text, or (a user message) a JSON object.
    content: Any
    # The agent's tool calls during its reply, as it reported them.
    tool_calls: Any = None


class UserTurnAsk(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Ask for a conversation's next user message: the case, the trial, the conversation so
    far (scripted user messages included)."""

    test_case_id: str
    trial: Annotated[int, msgspec.Meta(ge=1)] | None = None
    transcript: Annotated[
        tuple[TranscriptMessage, ...], msgspec.Meta(max_length=MAX_TRANSCRIPT_MESSAGES)
    ] = ()


class NextUserTurn(msgspec.Struct, frozen=True, kw_only=True):
    """The simulated user's next message, or that the conversation is done (the goal reached
    or out of reach, or `max_turns reached`), and why."""

    user: str | None
    done: bool
    reason: str
