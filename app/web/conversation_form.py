"""A conversation case in the rubric editor: its scripted turns (each a user message and its
checks) and its simulated user, as form fields and back.

Fields: `turns-T-user`, `turns-T-format` (text or a JSON object), `turns-T-checks-N-...` (a
check's fields, as the case's own), and `persona`, `goal`, `max_turns`, `opening`. Persona and
goal both empty: no simulated user. Nothing here does I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from agentlasso.domain.checks import PRODUCT_NAMES
from agentlasso.domain.conversations import DEFAULT_SIMULATED_TURNS, Conversation
from agentlasso.web.check_form import (
    CheckForm,
    check_field,
    check_form,
    check_payload,
    posted_checks,
)
from agentlasso.web.forms import parsed_json

_TURN_KEY = re.compile(r"^turns-(\d{1,2})-user$")
SIMULATED_FIELDS = ("persona", "goal", "max_turns", "opening")


class TurnForm(msgspec.Struct, kw_only=True):
    """One scripted turn as typed."""

    user: str = ""
    # "text": sent as typed; "json": a JSON object.
    format: str = "text"
    checks: list[CheckForm] = msgspec.field(default_factory=list)


class ConversationForm(msgspec.Struct, kw_only=True):
    """A conversation's turns and its simulated user, as typed."""

    turns: list[TurnForm] = msgspec.field(default_factory=list)
    persona: str = ""
    goal: str = ""
    max_turns: str = str(DEFAULT_SIMULATED_TURNS)
    opening: str = ""

    @property
    def has_simulated_user(self) -> bool:
        return bool(self.persona.strip() or self.goal.strip())


def from_conversation(conversation: Conversation) -> ConversationForm:
    """The form showing a stored conversation."""
    simulated = conversation.simulated_user
    return ConversationForm(
        turns=[
            TurnForm(
                user=_shown(turn.user),
                format="json" if isinstance(turn.user, dict) else "text",
                checks=[check_form(msgspec.to_builtins(check)) for check in turn.checks],
            )
            for turn in conversation.turns
        ],
        persona=simulated.persona if simulated else "",
        goal=simulated.goal if simulated else "",
        max_turns=str(simulated.max_turns if simulated else DEFAULT_SIMULATED_TURNS),
        opening=(simulated.opening or "") if simulated else "",
    )


def _shown(user: Any) -> str:
    return json.dumps(user, indent=2) if isinstance(user, dict) else str(user)


def from_posted(data: Mapping[str, Any]) -> ConversationForm:
    """The conversation as posted, its turns in their numbers' order."""
    numbers = sorted(int(match.group(1)) for key in data if (match := _TURN_KEY.match(key)))
    turns = [
        TurnForm(
            user=_text(data.get(f"turns-{number}-user")),
            format="json" if data.get(f"turns-{number}-format") == "json" else "text",
            checks=posted_checks(data, f"turns-{number}-checks"),
        )
        for number in numbers
    ]
    simulated = {name: _text(data.get(name)) for name in SIMULATED_FIELDS}
    return ConversationForm(turns=turns, **simulated)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def payload(form: ConversationForm, errors: dict[str, str]) -> dict[str, Any]:
    """The conversation as it is written through the API (problems typing it go in errors)."""
    written: dict[str, Any] = {
        "turns": [
            {
                "user": _user(turn, f"turns-{index}-user", errors),
                "checks": [check_payload(check) for check in turn.checks],
            }
            for index, turn in enumerate(form.turns)
        ]
    }
    if form.has_simulated_user:
        simulated: dict[str, Any] = {"persona": form.persona.strip(), "goal": form.goal.strip()}
        if form.max_turns.strip():
            try:
                simulated["max_turns"] = int(form.max_turns.strip())
            except ValueError:
                errors["max_turns"] = "Enter a whole number from 1 to 20."
        if form.opening.strip():
            simulated["opening"] = form.opening.strip()
        written["simulated_user"] = simulated
    return written


def _user(turn: TurnForm, field: str, errors: dict[str, str]) -> Any:
    if turn.format != "json":
        return turn.user
    value, problem = parsed_json(turn.user)
    if problem:
        errors[field] = f"{problem} Choose Text for a message that is not a JSON object."
    return value


def field_of(parts: list[str]) -> str:
    """The form field a pointer under /conversation names (its parts after `conversation`)."""
    if parts[:1] == ["simulated_user"]:
        return parts[1] if len(parts) > 1 and parts[1] in SIMULATED_FIELDS else "persona"
    if parts[:1] != ["turns"] or len(parts) < 2 or not parts[1].isdigit():
        return "turns"
    turn = f"turns-{parts[1]}"
    if len(parts) >= 4 and parts[2] == "checks" and parts[3].isdigit():
        return check_field(f"{turn}-checks-{parts[3]}", parts[4:])
    return f"{turn}-user"


def with_turn_added(form: ConversationForm) -> ConversationForm:
    """The conversation with an empty turn at the end."""
    return msgspec.structs.replace(form, turns=[*form.turns, TurnForm()])


def with_turn_removed(form: ConversationForm, index: int) -> ConversationForm:
    """The conversation without its turn at `index`."""
    turns = [turn for position, turn in enumerate(form.turns) if position != index]
    return msgspec.structs.replace(form, turns=turns)


def with_turn_check(
    form: ConversationForm, index: int, check_type: str | None, remove: int | None = None
) -> ConversationForm:
    """Turn `index` with a new check of `check_type` at its end, or without check `remove`."""
    if not 0 <= index < len(form.turns):
        return form
    turn = form.turns[index]
    checks = [check for position, check in enumerate(turn.checks) if position != remove]
    if check_type in PRODUCT_NAMES:
        checks.append(CheckForm(type=check_type))
    turns = list(form.turns)
    turns[index] = msgspec.structs.replace(turn, checks=checks)
    return msgspec.structs.replace(form, turns=turns)
