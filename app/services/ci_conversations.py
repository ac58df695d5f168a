"""A conversation as a CI client posts it (contract section 13): its turns checked against the
case's script, and made into the played conversation the recording path grades and stores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from agentlasso.domain.case_results import Played, Reported
from agentlasso.domain.conversations import (
    Conversation,
    EndedBy,
    PlayedConversation,
    TurnRecord,
    failed_turn,
    reported_answer,
)
from agentlasso.domain.grades import reply_text
from agentlasso.domain.test_cases import PinnedCase
from agentlasso.errors import FieldError
from agentlasso.schemas.run_results import PostedTurn


class PostedConversation(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What a posted result says about its conversation: its turns, and how it ended."""

    turns: tuple[PostedTurn, ...] | msgspec.UnsetType
    ended_by: EndedBy | msgspec.UnsetType
    # Top-level fields that a conversation's result does not take (posted per turn instead).
    single_turn_fields: tuple[str, ...] = ()
    # The client could not play the conversation out (its simulated user could not be asked):
    # the turns so far, if any, are kept and the conversation is not graded, with this reason.
    unplayed: str | None = None


def kind_problems(at: str, case: PinnedCase, posted: PostedConversation) -> list[FieldError]:
    """A result of the wrong kind for its case: `turns` and `ended_by` are only for a
    conversation, and `turns` is required for one (instead of `actual_output`)."""
    conversation = case.content.conversation
    if conversation is None:
        return [
            FieldError(pointer=f"{at}/{name}", detail=f"`{name}` is only for a conversation case.")
            for name, value in (("turns", posted.turns), ("ended_by", posted.ended_by))
            if value is not msgspec.UNSET
        ]
    problems = [
        FieldError(
            pointer=f"{at}/{name}",
            detail=f"A conversation's result is posted as `turns`, not `{name}`.",
        )
        for name in posted.single_turn_fields
    ]
    if posted.unplayed is not None:
        turns = () if posted.turns is msgspec.UNSET else posted.turns
        return problems + turn_problems(at, conversation, turns, posted.ended_by, some=False)
    if posted.turns is msgspec.UNSET:
        detail = "A conversation case's result needs `turns`: what the agent did at each turn."
        return [*problems, FieldError(pointer=f"{at}/turns", detail=detail)]
    return problems + turn_problems(at, conversation, posted.turns, posted.ended_by)


def turn_problems(
    at: str,
    conversation: Conversation,
    turns: Sequence[PostedTurn],
    ended_by: object,
    *,
    some: bool = True,
) -> list[FieldError]:
    """Turns that do not fit the script: none at all (when `some` are needed), more than it
    can take, a turn past the script without its user message, a turn after the one whose
    call failed."""
    if some and not turns:
        detail = "A conversation's result needs at least one turn."
        return [FieldError(pointer=f"{at}/turns", detail=detail)]
    most = conversation.most_turns()
    if len(turns) > most:
        detail = f"This conversation takes at most {most} turns; {len(turns)} were posted."
        return [FieldError(pointer=f"{at}/turns", detail=detail)]
    problems: list[FieldError] = []
    scripted = len(conversation.turns)
    failed_at: int | None = None
    for index, turn in enumerate(turns):
        where = f"{at}/turns/{index}"
        if failed_at is not None:
            detail = f"The conversation stopped at turn {failed_at}, whose agent call failed."
            problems.append(FieldError(pointer=where, detail=detail))
            break
        if index >= scripted and turn.user is msgspec.UNSET:
            detail = f"Turn {index + 1} is past the script's {scripted}: it needs its `user`."
            problems.append(FieldError(pointer=f"{where}/user", detail=detail))
        if turn.error is not None:
            failed_at = index + 1
            if "\x00" in turn.error:
                detail = "The text cannot contain the character U+0000."
                problems.append(FieldError(pointer=f"{where}/error", detail=detail))
    if failed_at is not None and ended_by not in (msgspec.UNSET, "error"):
        detail = f"Turn {failed_at}'s agent call failed: the conversation ended by `error`."
        problems.append(FieldError(pointer=f"{at}/ended_by", detail=detail))
    return problems


def played_of(conversation: Conversation, posted: PostedConversation) -> Played:
    """The posted turns as the conversation played (the problems above already refused)."""
    turns = () if posted.turns is msgspec.UNSET else posted.turns
    records = tuple(
        _record(number, turn, conversation) for number, turn in enumerate(turns, start=1)
    )
    ended_by: EndedBy
    if posted.ended_by is not msgspec.UNSET:
        ended_by = posted.ended_by
    elif posted.unplayed is not None:
        ended_by = "error" if conversation.simulated_user is None else "simulated_user"
    else:
        ended_by = default_ended_by(conversation, records)
    played = PlayedConversation(turns=records, ended_by=ended_by, not_graded_reason=posted.unplayed)
    return Played(conversation=played)


def _record(number: int, turn: PostedTurn, conversation: Conversation) -> TurnRecord:
    scripted = number <= len(conversation.turns)
    if turn.user is not msgspec.UNSET:
        user: Any = turn.user
    else:
        user = conversation.turns[number - 1].user
    output = turn.actual_output
    calls = turn.actual_tool_calls
    return TurnRecord(
        turn=number, user=user, simulated=not scripted,
        actual_output=None if output is msgspec.UNSET else reply_text(output),
        actual_tool_calls=None if calls is msgspec.UNSET else calls,
        latency_ms=turn.latency_ms, error=turn.error,
    )  # fmt: skip


def default_ended_by(conversation: Conversation, turns: Sequence[TurnRecord]) -> EndedBy:
    """How a posted conversation ended when the client did not say: `error` when a turn's call
    failed; `script` when every scripted turn was answered and no user was simulated; `agent`
    when it stopped before the script's end (the agent said `"end": true`); past the script,
    `max_turns` when the simulated user used all its turns, else `simulated_user`."""
    if any(turn.error is not None for turn in turns):
        return "error"
    scripted = len(conversation.turns)
    if len(turns) < scripted:
        return "agent"
    if conversation.simulated_user is None:
        return "script"
    return "max_turns" if len(turns) >= conversation.most_turns() else "simulated_user"


def reported_of(played: Played) -> Reported:
    """What a conversation's result stores as the agent's answer (reported_answer)."""
    output, calls = reported_answer(played.conversation)
    return Reported(actual_output=output, actual_tool_calls=calls)


def agent_error_of(played: Played) -> str | None:
    """The first failed turn's error, as the result's: the conversation errored."""
    return failed_turn(played.conversation)
