"""What a client or an agent posted, decoded from JSON, turned into an Observation."""

from __future__ import annotations

import msgspec

from agentlasso.domain.grades import Observation, ToolCall, reply_text
from agentlasso.grading.tool_calls import normalise_tool_calls


def observation_from_wire(
    actual_output: object,
    actual_tool_calls: object,
    *,
    output_reported: bool = True,
    tool_calls_reported: bool = True,
    agent_error: str | None = None,
    latency_ms: int | None = None,
) -> Observation:
    """Normalise a posted result; a field left out (flag False or msgspec.UNSET) is not reported.

    `actual_output` null is not reported, `""` is an empty reply. A reply that is not a string
    (an agent answering with a JSON object) is graded as its compact JSON text.
    `actual_tool_calls` null is not reported either (it is not a list of calls), `[]` is a
    report of no calls. `agent_error` says the call to the agent failed: every check fails
    with it. `latency_ms` is how long the agent took, when measured or reported.
    """
    output_missing = not output_reported or actual_output is msgspec.UNSET
    calls_missing = (
        not tool_calls_reported or actual_tool_calls is None or actual_tool_calls is msgspec.UNSET
    )
    calls: tuple[ToolCall, ...] | None = None
    problems: tuple[str, ...] = ()
    if not calls_missing:
        calls, problems = normalise_tool_calls(actual_tool_calls)
    return Observation(
        actual_output=None if output_missing else reply_text(actual_output),
        tool_calls=calls,
        unreadable_tool_calls=problems,
        agent_error=agent_error,
        latency_ms=latency_ms,
    )
