"""A conversation as the web app shows it: a chat of user and agent turns, each reply with its
tool calls and the verdicts of its turn, then the conversation's own checks and how it ended.
The case card, the editor's Paste a reply and the compare view all read it so."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec

from agentlasso.domain.conversations import ENDED_IN_WORDS, EndedBy, TurnRecord
from agentlasso.grading.conversation import turn_observation
from agentlasso.web.agent_reply import what_the_agent_did


def chat(
    turns: Sequence[TurnRecord],
    checks: Sequence[dict[str, Any]],
    ended_by: EndedBy | None,
    not_played: str | None = None,
) -> dict[str, Any]:
    """The turns as the chat shows them, each with its turn's checks (`turn` in each check's
    item, None for the case's own); scripted turns that never ran keep their checks too. A
    conversation that could not be played out says why, not how a played one ends."""
    by_turn: dict[int, list[dict[str, Any]]] = {}
    own: list[dict[str, Any]] = []
    for item in checks:
        turn = item.get("turn")
        (own if turn is None else by_turn.setdefault(turn, [])).append(item)
    ran = {record.turn for record in turns}
    return {
        "turns": [turn_shown(record, by_turn.get(record.turn, [])) for record in turns],
        "unreached": [(number, by_turn[number]) for number in sorted(by_turn) if number not in ran],
        "own": own,
        "ended": _ended_in_words(ended_by, not_played),
        "ended_by": ended_by,
    }


def _ended_in_words(ended_by: EndedBy | None, not_played: str | None) -> str | None:
    if not_played is not None:
        why = not_played.strip().rstrip(".")
        return f"It could not be played out, so it was not graded: {why}."
    return ENDED_IN_WORDS[ended_by] if ended_by is not None else None


def turn_shown(record: TurnRecord, checks: list[dict[str, Any]]) -> dict[str, Any]:
    """One turn: what the user said (and whether a model wrote it), what the agent did."""
    return {
        "turn": record.turn,
        "user": message_text(record.user),
        "simulated": record.simulated,
        "did": what_the_agent_did(turn_observation(record)),
        "error": record.error,
        "latency_ms": record.latency_ms,
        "checks": checks,
    }


def message_text(message: Any) -> str:
    """A user message as text: as written, or a JSON object laid out."""
    if isinstance(message, str):
        return message
    return json.dumps(message, indent=2, ensure_ascii=False)


def turn_of(result: Any) -> int | None:
    """The turn a check result grades (None: the conversation's own check)."""
    turn = getattr(result, "turn", msgspec.UNSET)
    return None if turn is msgspec.UNSET else int(turn)
