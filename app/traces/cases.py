"""What a test case made from a trace starts with: its input, and checks offered from its tools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentlasso.domain.checks import Check, ToolCalled, ToolOrder

# A tool order check lists at most this many calls (the check's own limit).
_MAX_ORDERED_TOOLS = 100
_MAX_TOOL_NAME = 256


def case_input(trace_input: Any) -> str | dict[str, Any] | None:
    """A case input from a trace's: text or an object as recorded, anything else wrapped in an
    object; None when the trace recorded no input."""
    if trace_input is None or trace_input == "":
        return None
    if isinstance(trace_input, str | dict):
        return trace_input
    return {"input": trace_input}


def suggested_checks(tool_names_in_order: Sequence[str]) -> tuple[Check, ...]:
    """A critical tool_called check per distinct tool, and when there were several calls, a
    tool_order check of their sequence."""
    names = [name for name in tool_names_in_order if 0 < len(name) <= _MAX_TOOL_NAME]
    checks: list[Check] = [ToolCalled(tool=name) for name in dict.fromkeys(names)]
    if len(names) > 1:
        checks.append(ToolOrder(tools=tuple(names[:_MAX_ORDERED_TOOLS])))
    return tuple(checks)
