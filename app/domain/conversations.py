"""A conversation: a test case of several turns, scripted and optionally played on by a
simulated user, and what running one produced (its turns, and how it ended).

Contract section 13. A case is single-turn (`input`) or a conversation, never both.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from agentlasso.domain.checks import MAX_CHECKS, Check
from agentlasso.domain.judging import Usage

MAX_SCRIPTED_TURNS = 50
MAX_SIMULATED_TURNS = 20
DEFAULT_SIMULATED_TURNS = 6
# A user message: text, or a JSON object (as a single-turn case's input).
UserMessage = Annotated[str, msgspec.Meta(max_length=1_000_000)] | dict[str, Any]
PersonaText = Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
EndedBy = Literal["script", "agent", "simulated_user", "max_turns", "error"]
Role = Literal["user", "assistant"]

ENDED_IN_WORDS: dict[EndedBy, str] = {
    "script": "The last scripted turn was answered.",
    "agent": "The agent ended the conversation.",
    "simulated_user": "The simulated user ended the conversation.",
    "max_turns": "The simulated user reached its turn limit.",
    "error": "An agent call failed, which stopped the conversation.",
}


class ScriptedTurn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, gc=False):
    """One scripted user turn, with checks on the agent's reply to it and its calls during it."""

    user: UserMessage
    checks: Annotated[tuple[Check, ...], msgspec.Meta(max_length=MAX_CHECKS)] = ()


class SimulatedUser(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A model playing the user after the script: who it is and what it wants."""

    persona: PersonaText
    goal: PersonaText
    # The most user messages the model writes (the opening included); scripted turns apart.
    max_turns: Annotated[int, msgspec.Meta(ge=1, le=MAX_SIMULATED_TURNS)] = DEFAULT_SIMULATED_TURNS
    # The first user message when there are no scripted turns (else the model writes it).
    opening: Annotated[str, msgspec.Meta(min_length=1, max_length=100_000)] | None = None


class Conversation(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """The turns of a conversation case, and the simulated user who plays on after them."""

    turns: Annotated[tuple[ScriptedTurn, ...], msgspec.Meta(max_length=MAX_SCRIPTED_TURNS)] = ()
    simulated_user: SimulatedUser | None = None

    def turn_checks(self) -> tuple[tuple[int, Check], ...]:
        """Every turn's checks with their (1-based) turn, in order."""
        return tuple(
            (number, check)
            for number, turn in enumerate(self.turns, start=1)
            for check in turn.checks
        )

    def most_turns(self) -> int:
        """The most turns a run of this conversation can take."""
        simulated = 0 if self.simulated_user is None else self.simulated_user.max_turns
        return len(self.turns) + simulated


class Message(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """One message of a transcript, as an agent and the simulated user are shown it."""

    role: Role
    content: Any
    tool_calls: Any = None


class TurnRecord(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One turn as it ran: the user's message, the agent's answer, and how the call went."""

    turn: int
    user: Any
    # Written by the simulated user (else scripted, or the CI client's own).
    simulated: bool = False
    # None: not reported (or the call failed).
    actual_output: str | None = None
    actual_tool_calls: Any = None
    latency_ms: int | None = None
    error: str | None = None
    # The W3C trace id of this turn's call to the agent (contract section 14); left out when
    # no call carried one (a CI client's turns).
    agent_trace_id: str | msgspec.UnsetType = msgspec.UNSET


class SimulatedUsage(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What playing the user cost a conversation: the model's calls, tokens and price."""

    model: str | None = None
    calls: int = 0
    usage: Usage = Usage()
    # None when the server has no price for the model (its tokens are still counted).
    cost_usd: float | None = None


class UserTurn(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The simulated user's answer for one turn: its next message, or that it is done."""

    # The next user message; None when done (or when the model could not be asked).
    user: str | None
    # The goal is reached or out of reach: the conversation ends, by the simulated user.
    done: bool
    # Why it is done, or what this message is after, in the model's words.
    reason: str
    usage: Usage = Usage()
    model: str | None = None
    # Set when the model could not be asked, or its answer was unusable after the retries:
    # the conversation is then not graded, with this reason (never passed).
    failure: str | None = None
    # What asking cost, when the asker priced it (None: no price known, or not priced).
    cost_usd: float | None = None
    # The requests asking took, failed ones included (as the judge's calls are counted).
    calls: int = 1


def transcript(turns: tuple[TurnRecord, ...]) -> tuple[Message, ...]:
    """The turns as messages: each user message, then the agent's reply when it gave one."""
    messages: list[Message] = []
    for record in turns:
        messages.append(Message(role="user", content=record.user))
        if record.error is None and record.actual_output is not None:
            messages.append(
                Message(
                    role="assistant",
                    content=record.actual_output,
                    tool_calls=record.actual_tool_calls or None,
                )
            )
    return tuple(messages)


def conversation_problems(conversation: Conversation) -> list[tuple[str, str]]:
    """(pointer, detail) for what makes a conversation unrunnable beyond its shape."""
    if not conversation.turns and conversation.simulated_user is None:
        return [
            (
                "/conversation/turns",
                "A conversation needs at least one scripted turn or a simulated_user.",
            )
        ]
    return []


class PlayedConversation(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A conversation as it ran: its turns in order, and how it ended."""

    turns: tuple[TurnRecord, ...]
    ended_by: EndedBy
    # Set when the simulated user's model could not be asked (an outage): the conversation is
    # then not graded, with this reason, and never passed.
    not_graded_reason: str | None = None


def first_message(case_input: Any, conversation: Conversation | None) -> Any:
    """What a case is about, to name it to a reader: its input, or a conversation's first user
    message (the first scripted turn's, else the simulated user's opening, else its goal)."""
    if conversation is None:
        return case_input
    if conversation.turns:
        return conversation.turns[0].user
    simulated = conversation.simulated_user
    return "" if simulated is None else simulated.opening or simulated.goal


def reported_answer(played: PlayedConversation) -> tuple[Any, Any]:
    """What a conversation's result stores as the agent's answer: the final reply (UNSET when
    it gave none), and every call of every turn in order (UNSET when some turn left its calls
    unreported: a partial list would read as the whole)."""
    final = played.turns[-1].actual_output if played.turns else None
    output: Any = msgspec.UNSET if final is None else final
    calls: list[Any] = []
    for record in played.turns:
        if not isinstance(record.actual_tool_calls, list):
            return output, msgspec.UNSET
        calls += record.actual_tool_calls
    return output, calls if played.turns else msgspec.UNSET


def failed_turn(played: PlayedConversation) -> str | None:
    """`turn 3: <the call's error>` when an agent call stopped the conversation, else None:
    the result's agent_error (the conversation errored)."""
    failed = next((record for record in played.turns if record.error is not None), None)
    return None if failed is None else f"turn {failed.turn}: {failed.error}"
