"""Tool calls as agents report them (ours, the OpenAI and the Anthropic shapes), made uniform.

Accepted entries: `{"name", "arguments"}` (arguments an object or a JSON string), the OpenAI
shape `{"function": {"name", "arguments"}}` and the Anthropic shape
`{"type": "tool_use", "name", "input"}`. Anthropic content blocks that are not calls (`text`,
`thinking`, `tool_result`, ...) are skipped, so a whole content list may be posted.

Nothing here raises. An entry that is not a readable call (not an object, no non-empty string
name) is kept out of the calls and described instead; tool checks then refuse to report a pass
they could not verify (see tool_checks). Names are kept exactly as sent: matching is exact.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentlasso.domain.grades import ToolCall
from agentlasso.domain.json_nesting import too_deep

# Anthropic content blocks that carry no tool call.
_NOT_CALLS = frozenset(
    {"text", "thinking", "redacted_thinking", "tool_result", "image", "document"}
)


def normalise_tool_calls(raw: object) -> tuple[tuple[ToolCall, ...], tuple[str, ...]]:
    """The readable calls, in order, and a description of each entry that could not be read."""
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        return (), (f"the tool calls were {_kind(raw)}, not a list",)
    calls: list[ToolCall] = []
    problems: list[str] = []
    for index, entry in enumerate(raw):
        call = _read_entry(entry)
        if isinstance(call, ToolCall):
            calls.append(call)
        elif call is not None:
            problems.append(f"entry {index + 1} {call}")
    return tuple(calls), tuple(problems)


def _read_entry(entry: object) -> ToolCall | str | None:
    """A call, a problem description, or None for a content block that is not a call."""
    if not isinstance(entry, dict):
        return f"is {_kind(entry)}, not an object"
    function = entry.get("function")
    if isinstance(function, dict):
        return _call(function.get("name"), function.get("arguments"))
    if entry.get("type") in _NOT_CALLS:
        return None
    arguments = entry["arguments"] if "arguments" in entry else entry.get("input")
    return _call(entry.get("name"), arguments)


def _call(name: object, arguments: object) -> ToolCall | str:
    """A call from a name and raw arguments, or why it is not one."""
    if not isinstance(name, str) or not name:
        return "has no tool name"
    return ToolCall(name=name, arguments=_decode_arguments(arguments))


def _decode_arguments(arguments: object) -> Any:
    """Arguments sent as a JSON string, decoded; anything else (or bad JSON) kept as sent."""
    if not isinstance(arguments, str) or too_deep(arguments) is not None:
        return arguments  # nested too deeply to walk safely: kept as the text it was
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments


def _kind(value: object) -> str:
    """A JSON-ish name for a value's type, for a person reading the detail."""
    kinds: dict[type, str] = {
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        dict: "an object",
        list: "a list",
    }
    if value is None:
        return "null"
    return kinds.get(type(value), f"a {type(value).__name__}")
