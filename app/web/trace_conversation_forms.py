"""Add to dataset for a conversation: each turn with the checks its own tool calls offer.

As for one trace (trace_forms), each check is a checkbox, all ticked, sent back by value and
matched against the checks offered again from the stored traces: a posted form can keep or
drop an offered check but never invent one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from agentlasso.domain.checks import Check
from agentlasso.traces.conversation_cases import TurnDraft, offered_turn_checks
from agentlasso.web.forms import text
from agentlasso.web.trace_forms import EXPECTED_OUTPUT_MAX_CHARS, OfferedCheck, offered_checks


class TurnOffer(msgspec.Struct, kw_only=True):
    """One turn in the form: its user message, its offered checks, those left ticked."""

    number: int
    turn: TurnDraft
    offered: list[OfferedCheck]
    ticked: set[str]

    @property
    def field(self) -> str:
        """The name of its checkboxes' field."""
        return f"turn-{self.number}-checks"

    def kept(self) -> tuple[Check, ...]:
        """The offered checks left ticked, in the order they were offered."""
        return tuple(offer.check for offer in self.offered if offer.key in self.ticked)


class ConversationChoice(msgspec.Struct, kw_only=True):
    """A conversation in the Add to dataset form, as offered or as the person left it."""

    turns: list[TurnOffer]
    use_reply: bool = False
    expected_output: str = ""

    def kept_turn_checks(self) -> list[tuple[Check, ...]]:
        """Each turn's checks left ticked."""
        return [turn.kept() for turn in self.turns]

    def expected(self) -> str | None:
        """The expected output, only when the person chose to use it."""
        return self.expected_output if self.use_reply else None


def offered_conversation(turns: Sequence[TurnDraft]) -> ConversationChoice:
    """The turns as the form first offers them: every check ticked, the last reply a draft."""
    offers = []
    offered_by_turn = offered_turn_checks(turns)
    for number, (turn, checks) in enumerate(zip(turns, offered_by_turn, strict=True), start=1):
        offered = offered_checks(checks)
        offers.append(TurnOffer(number=number, turn=turn, offered=offered,
                                ticked={offer.key for offer in offered}))  # fmt: skip
    last_reply = turns[-1].reply if turns else None
    return ConversationChoice(turns=offers, expected_output=last_reply or "")


def posted_conversation(
    form: Any, turns: Sequence[TurnDraft], errors: dict[str, str]
) -> ConversationChoice:
    """The posted form's choices for the turns; its problems noted by field."""
    choice = offered_conversation(turns)
    for turn in choice.turns:
        turn.ticked = {value for value in form.getall(turn.field, []) if value}
    choice.use_reply = form.get("use_reply") == "on"
    choice.expected_output = text(form, "expected_output")
    if choice.use_reply and not choice.expected_output.strip():
        errors["expected_output"] = "Write the expected output, or untick “use the reply”."
    elif choice.use_reply and len(choice.expected_output) > EXPECTED_OUTPUT_MAX_CHARS:
        errors["expected_output"] = f"At most {EXPECTED_OUTPUT_MAX_CHARS:,} characters."
    if not choice.turns:
        errors[""] = (
            "No trace of this conversation recorded an input, so no case can start from it."
        )
    return choice
