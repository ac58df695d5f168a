"""What an agent did on one call, as the preview and Send test message show it: the reply and
the tool calls in order, read as a run reads them."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from agentlasso.agents import AgentCallResult
from agentlasso.domain.case_results import StoredResult
from agentlasso.domain.conversations import transcript
from agentlasso.domain.grades import Observation
from agentlasso.grading import observation_from_wire


def observed(call: AgentCallResult) -> Observation:
    """The call's reply and tool calls as a run grades them (left out: not reported)."""
    return observation_from_wire(
        call.actual_output,
        call.actual_tool_calls,
        agent_error=call.error,
        latency_ms=call.latency_ms,
    )


def observation_of(result: StoredResult) -> Observation:
    """A stored result's reply and tool calls as its run graded them."""
    return observation_from_wire(
        result.reported.actual_output,
        result.reported.actual_tool_calls,
        agent_error=result.agent_error,
        latency_ms=result.reported.latency_ms,
    )


def pasted_fields(result: StoredResult) -> dict[str, str]:
    """A stored result as the rubric editor's Paste a reply fields: the reply as sent, and the
    tool calls as JSON (both empty when not reported); a conversation's transcript."""
    if result.turns is not None:
        # A conversation's: its transcript, as Paste a reply reads one (app/web/transcripts.py).
        messages = msgspec.to_builtins(transcript(result.turns))
        ended = {} if result.ended_by in (None, "error") else {"pasted_ended_by": result.ended_by}
        return {"pasted_transcript": json.dumps(messages, indent=2, ensure_ascii=False), **ended}
    reply = result.reported.actual_output
    calls = result.reported.actual_tool_calls
    return {
        "pasted_reply": _as_text(reply),
        "pasted_tool_calls": "" if _missing(calls) else json.dumps(calls, indent=2),
    }


def _as_text(value: Any) -> str:
    if _missing(value):
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _missing(value: Any) -> bool:
    return value is None or value is msgspec.UNSET


def what_the_agent_did(observation: Observation) -> dict[str, Any]:
    """The reply (None: not reported), and the tool calls with their arguments as text."""
    return {
        "reply": observation.actual_output,
        "tool_calls": [
            {"name": call.name, "arguments": _shown(call.arguments)}
            for call in observation.tool_calls or ()
        ],
        "tool_calls_reported": observation.tool_calls is not None,
        "unreadable_tool_calls": observation.unreadable_tool_calls,
    }


# Arguments this short stay on the tool's line; longer ones are laid out, two spaces a level.
ONE_LINE_CHARS = 60


def _shown(arguments: Any) -> str:
    """Arguments as text: an object (or a JSON string, decoded when the calls were read)
    pretty-printed when it does not fit on one short line; a string that is not JSON as sent."""
    if isinstance(arguments, str):
        return arguments
    compact = json.dumps(arguments, ensure_ascii=False)
    if len(compact) <= ONE_LINE_CHARS:
        return compact
    return json.dumps(arguments, ensure_ascii=False, indent=2)
