"""The body of a 2xx answer read as the agent's reply: `{"output": ..., "tool_calls": [...]}`,
with `"end": true` when the agent ends a conversation (contract section 13)."""

from __future__ import annotations

from typing import Any

import msgspec

from agentlasso.domain.json_nesting import too_deep

_KINDS: dict[type, str] = {
    list: "a JSON array",
    str: "a JSON string",
    int: "a JSON number",
    float: "a JSON number",
    bool: "a JSON boolean",
    type(None): "JSON null",
}


class Reply(msgspec.Struct, frozen=True):
    """The two values an agent reports, kept as decoded JSON; UNSET where the key was missing."""

    output: Any
    tool_calls: Any
    # The agent ends the conversation with this reply (only `true` itself counts).
    end: bool = False


def parse_reply(body: bytes) -> Reply | str:
    """The reply in the body, or a sentence saying why the body is not one."""
    if too_deep(body) is not None:
        return "the agent's answer is JSON nested too deeply to read"
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        return _not_json(body, exc)
    if not isinstance(decoded, dict):
        kind = _KINDS.get(type(decoded), "a JSON value")
        return f"the agent's answer is {kind}, not a JSON object"
    # A missing "tool_calls" means the calls were not reported, which is not "no calls".
    return Reply(
        decoded.get("output", msgspec.UNSET),
        decoded.get("tool_calls", msgspec.UNSET),
        decoded.get("end") is True,
    )


def _not_json(body: bytes, exc: msgspec.DecodeError) -> str:
    """Why the body is not JSON, with its start so the agent's owner can tell what came back."""
    if not body.strip():
        return "the agent's answer is empty, not a JSON object"
    start = body[:60].decode("utf-8", "replace")
    return f"the agent's answer is not JSON: {exc} (it starts {start!r})"
