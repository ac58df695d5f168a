"""Checks on the agent's tool calls: matched on the exact name, arguments never compared."""

from __future__ import annotations

from agentlasso.domain.checks import ToolCalled, ToolNotCalled, ToolOrder
from agentlasso.domain.grades import CheckResult
from agentlasso.grading.context import GradingContext
from agentlasso.grading.excerpts import VALUE_CHARS, count_noun, name_list, shorten
from agentlasso.grading.outcomes import decided


def grade_tool_called(check: ToolCalled, context: GradingContext) -> CheckResult:
    """Passes when a call with exactly this name appears."""
    tool = shorten(check.tool, VALUE_CHARS)
    if check.tool in context.tool_names():
        return decided(check, "tool_called", True, f"{tool} was called.")
    detail = f"{tool} was never called. {context.tool_report()}"
    return decided(check, "tool_called", False, detail)


def grade_tool_not_called(check: ToolNotCalled, context: GradingContext) -> CheckResult:
    """Passes when no call has this name and every reported entry could be read."""
    tool = shorten(check.tool, VALUE_CHARS)
    if check.tool in context.tool_names():
        times = context.tool_sequence().count(check.tool)
        detail = f"{tool} must not be called, but was called {count_noun(times, 'time')}. "
        return decided(check, "tool_not_called", False, detail + context.tool_report())
    if context.observation.unreadable_tool_calls:
        # An entry we could not read might be this very tool: never pass what was not verified.
        detail = f"Cannot confirm that {tool} was not called.{context.unreadable_note()}"
        return decided(check, "tool_not_called", False, detail)
    return decided(check, "tool_not_called", True, f"{tool} was not called.")


def grade_tool_order(check: ToolOrder, context: GradingContext) -> CheckResult:
    """Passes when the tools appear in this order as a subsequence (repeats must repeat)."""
    expected = check.tools
    matched = 0
    # Greedy matching finds a subsequence whenever one exists.
    for name in context.tool_sequence():
        if matched == len(expected):
            break
        if name == expected[matched]:
            matched += 1
    if matched == len(expected):
        detail = f"The tools were called in this order: {_order(expected)}."
        return decided(check, "tool_order", True, detail)
    detail = f"Expected the tools in this order: {_order(expected)}. "
    return decided(check, "tool_order", False, detail + context.tool_report())


def _order(tools: tuple[str, ...]) -> str:
    """`a -> b -> c`, shortened when long."""
    return name_list(tools, " -> ")
