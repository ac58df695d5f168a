"""A conversation pasted into the rubric editor, read as the turns a run would have played.

Two ways to write one (the field's hint says so):

- a JSON list of messages, as agents are sent them: `[{"role": "user", "content": "..."},
  {"role": "assistant", "content": "...", "tool_calls": [...]}, ...]`;
- lines: a message starts with `User:` or `Agent:`, and the lines after it continue it; in an
  agent's message a line `Tool calls: [...]` (a JSON list) gives the calls it made.

Each user message starts a turn; the agent's message after it is that turn's reply (none: the
turn has no reply). A reply without tool calls made no calls. User messages after the scripted
turns are the simulated user's. Nothing here does I/O.
"""

from __future__ import annotations

import json
from typing import Any

from agentlasso.domain.conversations import (
    MAX_SCRIPTED_TURNS,
    MAX_SIMULATED_TURNS,
    EndedBy,
    PlayedConversation,
    TurnRecord,
)
from agentlasso.errors import FieldError, InvalidInput
from agentlasso.web.forms import parsed_json

MOST_TURNS = MAX_SCRIPTED_TURNS + MAX_SIMULATED_TURNS
_ROLES = {"user": "user", "assistant": "assistant", "agent": "assistant"}
_TOOL_CALLS = "tool calls:"


def _unread(detail: str) -> InvalidInput:
    """Why the pasted transcript cannot be read, shown beside its field."""
    return InvalidInput(
        "The transcript is not read.", [FieldError(pointer="/pasted_transcript", detail=detail)]
    )


def played_from_paste(raw: str, scripted_turns: int, ended_by: EndedBy) -> PlayedConversation:
    """The pasted transcript as a played conversation; InvalidInput when it is not one."""
    messages = _json_messages(raw) if raw.lstrip().startswith("[") else _line_messages(raw)
    turns: list[TurnRecord] = []
    for index, (role, content, calls) in enumerate(messages, start=1):
        if role == "user":
            turns.append(
                TurnRecord(
                    turn=len(turns) + 1, user=content, simulated=len(turns) >= scripted_turns
                )
            )
            continue
        if not turns or turns[-1].actual_output is not None:
            raise _unread(
                f"Message {index} is the agent's, but no user message comes before it: each "
                "agent message answers the user message just above it."
            )
        last = turns[-1]
        turns[-1] = TurnRecord(
            turn=last.turn, user=last.user, simulated=last.simulated,
            actual_output=content if isinstance(content, str) else json.dumps(content),
            actual_tool_calls=calls,
        )  # fmt: skip
    if not turns:
        raise _unread("Paste at least one user message and the agent's reply.")
    if len(turns) > MOST_TURNS:
        raise _unread(f"A conversation has at most {MOST_TURNS} turns.")
    return PlayedConversation(turns=tuple(turns), ended_by=ended_by)


def _json_messages(raw: str) -> list[tuple[str, Any, Any]]:
    value, problem = parsed_json(raw, want=list)
    if problem:
        raise _unread(f"The transcript is not read: {problem}")
    messages = []
    for index, message in enumerate(value or [], start=1):
        role = _ROLES.get(str(message.get("role", "")).lower())
        if role is None or "content" not in message:
            raise _unread(
                f'Message {index} needs a "role" ("user" or "assistant") and a "content".'
            )
        messages.append((role, message["content"], message.get("tool_calls") or []))
    return messages


def _line_messages(raw: str) -> list[tuple[str, Any, Any]]:
    messages: list[tuple[str, list[str], Any]] = []
    for number, line in enumerate(raw.splitlines(), start=1):
        head, _, rest = line.partition(":")
        role = _ROLES.get(head.strip().lower()) if _ else None
        if role is not None:
            messages.append((role, [rest.strip()], []))
        elif messages and messages[-1][0] == "assistant" and line.lower().startswith(_TOOL_CALLS):
            calls, problem = parsed_json(line[len(_TOOL_CALLS) :], want=list)
            if problem:
                raise _unread(f"The tool calls on line {number} are not read: {problem}")
            messages[-1] = (messages[-1][0], messages[-1][1], calls or [])
        elif messages:
            messages[-1][1].append(line)
        elif line.strip():
            raise _unread(
                f"Line {number} comes before the first message: start each message with "
                "User: or Agent:."
            )
    return [(role, "\n".join(lines).strip(), calls) for role, lines, calls in messages]
