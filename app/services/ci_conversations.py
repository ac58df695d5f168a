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
        return problems + turn_problems(at, conversation, turns, posted.ended_by, unplayed=True)
    if posted.turns is msgspec.UNSET:
        detail = "A conversation case's result needs `turns`: what the agent did at each turn."
        return [*problems, FieldError(pointer=f"{at}/turns", detail=detail)]
    return problems + turn_problems(at, conversation, posted.turns, posted.ended_by)


def turn_problems(
    at: str,
    conversation: Conversation,
    turns: Sequence[PostedTurn],
    ended_by: EndedBy | msgspec.UnsetType,
    *,
    unplayed: bool = False,
) -> list[FieldError]:
    """Turns that do not fit the script: none at all (unless the client could not play the
    conversation out), more than it can take, a scripted turn with another user message, a
    turn past the script without its user message, a turn after the one whose call failed;
    and an `ended_by` the turns contradict."""
    if not unplayed and not turns:
        detail = "A conversation's result needs at least one turn."
        return [FieldError(pointer=f"{at}/turns", detail=detail)]
    most = conversation.most_turns()
    if len(turns) > most:
        detail = f"This conversation takes at most {most} turns; {len(turns)} were posted."
        return [FieldError(pointer=f"{at}/turns", detail=detail)]
    problems, failed_at = _each_turn_problems(at, conversation, turns)
    if ended_by is msgspec.UNSET:
        return problems
    if failed_at is not None and ended_by != "error":
        detail = f"Turn {failed_at}'s agent call failed: the conversation ended by `error`."
        return [*problems, FieldError(pointer=f"{at}/ended_by", detail=detail)]
    failed = failed_at is not None or unplayed
    why = ended_by_problem(conversation, len(turns), ended_by, failed=failed)
    if why is not None:
        problems.append(FieldError(pointer=f"{at}/ended_by", detail=why))
    return problems


def _each_turn_problems(
    at: str, conversation: Conversation, turns: Sequence[PostedTurn]
) -> tuple[list[FieldError], int | None]:
    """Each turn's problems, and the turn whose agent call failed, if one did."""
    problems: list[FieldError] = []
    scripted = conversation.turns
    for index, turn in enumerate(turns):
        where = f"{at}/turns/{index}"
        if index >= len(scripted) and turn.user is msgspec.UNSET:
            detail = f"Turn {index + 1} is past the script's {len(scripted)}: it needs its `user`."
            problems.append(FieldError(pointer=f"{where}/user", detail=detail))
        # Else that turn's checks would grade the reply to another message, shown as scripted.
        if index < len(scripted) and turn.user not in (msgspec.UNSET, scripted[index].user):
            detail = (
                f"Turn {index + 1} is scripted: its `user` is the script's message, or left out."
            )
            problems.append(FieldError(pointer=f"{where}/user", detail=detail))
        if turn.error is not None:
            if "\x00" in turn.error:
                detail = "The text cannot contain the character U+0000."
                problems.append(FieldError(pointer=f"{where}/error", detail=detail))
            if index + 1 < len(turns):
                detail = f"The conversation stopped at turn {index + 1}, whose agent call failed."
                problems.append(FieldError(pointer=f"{at}/turns/{index + 1}", detail=detail))
            return problems, index + 1
    return problems, None


def ended_by_problem(
    conversation: Conversation, posted: int, ended_by: EndedBy, *, failed: bool
) -> str | None:
    """Why `ended_by` contradicts the posted turns (`failed`: one failed, or the client could
    not play the conversation out), None when it does not: `script` needs every scripted turn
    and no simulated user; `simulated_user` and `max_turns` a simulated user and every
    scripted turn, `max_turns` exactly max_turns simulated turns; `error` a failed turn;
    `agent` is always possible."""
    scripted = len(conversation.turns)
    user = conversation.simulated_user
    if ended_by == "error":
        return (
            None
            if failed
            else "No turn's agent call failed: the conversation did not end by `error`."
        )
    if ended_by == "agent":
        return None
    if ended_by == "script" and user is not None:
        return (
            "Its simulated user plays on after the script: the conversation cannot end by `script`."
        )
    if ended_by != "script" and user is None:
        return f"This conversation has no simulated user: it cannot end by `{ended_by}`."
    if posted < scripted:
        return (
            f"{posted} of the script's {scripted} turns were posted: the conversation ends by "
            f"`{ended_by}` only after every scripted turn (by `agent` when the agent ended it)."
        )
    if ended_by == "max_turns" and user is not None and posted - scripted != user.max_turns:
        return (
            f"The simulated user wrote {posted - scripted} of its {user.max_turns} messages "
            "(max_turns): the conversation did not end by `max_turns`."
        )
    return None


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
        agent_trace_id=turn.agent_trace_id or msgspec.UNSET,
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
