"""An Agent2Agent (A2A) server as an agent (contract section 14): JSON-RPC `message/send` per
turn, `tasks/get` for a task still running, and the agent card read at registration.

Decisions where the protocol leaves a choice:
- The methods are A2A 0.3's (`message/send`, `tasks/get`), which deployed servers speak and
  the 1.x SDK answers beside its own.
- A conversation is one `contextId` (its `conversation_id`); a single-turn call gets a new one.
- `blocking` is asked for, so a server that can wait answers when the task is done; one that
  answers with a task still submitted or working is asked again (the caller's deadline bounds
  that).
- A task that stops for input (`input-required`, `auth-required`) is the agent's reply for the
  turn: its status message is what it said, as a person reading the exchange would see it.
- Tool calls are read from data parts shaped as section 3's calls (`{"tool_calls": [...]}` or
  one `{"name", "arguments"}`); a reply with none has its calls unreported.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from typing import Any

import msgspec

from agentlasso.agent_wire.replies import Reply
from agentlasso.domain.json_nesting import too_deep

# The body's keys that travel as the message's metadata.
_METADATA_KEYS = ("source", "test_case_id", "run_id", "trial", "turn", "context", "tool_fixtures")
_FINISHED = {"completed"}
_FAILED = {"failed", "canceled", "rejected"}
_STOPPED_FOR_INPUT = {"input-required", "auth-required"}
_BLOCKING = {"blocking": True}
_encoder = msgspec.json.Encoder()


class A2aPending(msgspec.Struct, frozen=True):
    """A task the agent has not finished: asked about again by its id."""

    task_id: str
    state: str


class _Part(msgspec.Struct, frozen=True):
    kind: Any = None
    text: Any = None
    data: Any = None


class _Message(msgspec.Struct, frozen=True):
    parts: list[_Part] = []


class _Status(msgspec.Struct, frozen=True):
    state: Any = None
    message: _Message | None = None


class _Artifact(msgspec.Struct, frozen=True):
    parts: list[_Part] = []


class _Result(msgspec.Struct, frozen=True):
    kind: Any = None
    id: Any = None
    parts: list[_Part] = []
    status: _Status | None = None
    artifacts: list[_Artifact] = []


class _Error(msgspec.Struct, frozen=True):
    code: Any = None
    message: Any = None


class _Response(msgspec.Struct, frozen=True):
    result: _Result | None = None
    error: _Error | None = None


_response_decoder = msgspec.json.Decoder(_Response)


def encode_send(body: Mapping[str, Any]) -> bytes:
    """A `message/send` request carrying one turn of the platform's request body."""
    agent_input = body.get("input")
    part: dict[str, Any] = (
        {"kind": "text", "text": agent_input}
        if isinstance(agent_input, str)
        else {"kind": "data", "data": agent_input}
    )
    # One new id is the request's, its message's and a single turn's context's: each is still
    # unique among its kind.
    call_id = _new_id()
    message = {
        "kind": "message",
        "role": "user",
        "messageId": call_id,
        "contextId": str(body.get("conversation_id") or call_id),
        "parts": [part],
        "metadata": {key: value for key in _METADATA_KEYS if (value := body.get(key)) is not None},
    }
    params = {"message": message, "configuration": _BLOCKING}
    return _encoder.encode(_rpc("message/send", params, call_id))


def encode_poll(task_id: str) -> bytes:
    """A `tasks/get` request for a task still running."""
    return _encoder.encode(_rpc("tasks/get", {"id": task_id}, _new_id()))


def _rpc(method: str, params: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}


# Ids are this process's random prefix and a count: unique across processes and calls
# without a read of the system's randomness per id (three a call, on the hot path). A forked
# child draws its own prefix, or it would repeat its parent's ids.
_id_prefix = os.urandom(10).hex()
_id_numbers = itertools.count(1)


def _new_prefix() -> None:
    global _id_prefix
    _id_prefix = os.urandom(10).hex()


os.register_at_fork(after_in_child=_new_prefix)


def _new_id() -> str:
    """A request's, message's or single-turn context's id, never the same twice."""
    return f"{_id_prefix}{next(_id_numbers):012x}"


def decode_answer(content: bytes) -> Reply | A2aPending | str:
    """The agent's reply in a JSON-RPC answer, a task still running, or why it is neither."""
    if too_deep(content) is not None:
        return "the agent's answer is JSON nested too deeply to read"
    try:
        response = _response_decoder.decode(content)
    except msgspec.DecodeError as exc:
        return f"the agent's answer is not an A2A JSON-RPC response: {exc}"
    if response.error is not None:
        return _error_sentence(response.error)
    result = response.result
    if result is None:
        return "the agent's answer is an A2A response with no result"
    if result.kind == "message":
        return _reply(result.parts)
    if result.kind == "task":
        return _task_reply(result)
    kind = str(result.kind)[:40]
    return f"the agent's answer is an A2A result of kind {kind!r}, not a message or task"


def _task_reply(task: _Result) -> Reply | A2aPending | str:
    """A task's reply once it is done; a task still running; or how it ended badly."""
    status = task.status or _Status()
    state = str(status.state)[:40]
    said = _text(status.message.parts) if status.message else ""
    if state in _FINISHED:
        parts = [part for artifact in task.artifacts for part in artifact.parts]
        return _reply(parts) if parts else _reply(status.message.parts if status.message else [])
    if state in _FAILED:
        because = f": {said[:500]}" if said else ""
        return f"the agent's A2A task ended {state}{because}"
    if state in _STOPPED_FOR_INPUT:
        return _reply(status.message.parts if status.message else [])
    if not isinstance(task.id, str) or not task.id:
        return "the agent's answer is an A2A task with no id"
    return A2aPending(task.id, state)


def _reply(parts: list[_Part]) -> Reply:
    """The reply in a message's parts: its text, and the tool calls its data parts report."""
    calls: list[Any] = []
    reported = False
    for part in parts:
        if part.kind != "data" or not isinstance(part.data, dict):
            continue
        if isinstance(reported_calls := part.data.get("tool_calls"), list):
            calls.extend(reported_calls)
            reported = True
        elif isinstance(part.data.get("name"), str):
            calls.append(part.data)
            reported = True
    return Reply(_text(parts), calls if reported else msgspec.UNSET)


def _text(parts: list[_Part]) -> str:
    return "\n".join(part.text for part in parts if isinstance(part.text, str))


def _error_sentence(error: _Error) -> str:
    message = error.message if isinstance(error.message, str) else "no message"
    return f"the agent's answer is an A2A error ({str(error.code)[:16]}): {message[:500]}"
