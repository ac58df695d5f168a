"""Checks on the agent's tool calls: matched on the exact name, and on the arguments only
where a check lists them (tool_arguments.py)."""

from __future__ import annotations

import functools

import msgspec

from agentlasso.domain.checks import MaxToolCalls, ToolCalled, ToolNotCalled, ToolOrder
from agentlasso.domain.grades import CheckResult, ToolCall
from agentlasso.domain.tool_arguments import ToolStep, matching, named_tool
from agentlasso.grading.context import GradingContext
from agentlasso.grading.excerpts import VALUE_CHARS, count_noun, name_list, shorten
from agentlasso.grading.outcomes import decided
from agentlasso.grading.tool_arguments import closest, compare


def grade_tool_called(check: ToolCalled, context: GradingContext) -> CheckResult:
    """Passes when a call with exactly this name appears (with the listed arguments)."""
    tool = shorten(check.tool, VALUE_CHARS)
    if check.tool not in context.tool_names():
        detail = f"{tool} was never called. {context.tool_report()}"
        return decided(check, "tool_called", False, detail)
    if check.arguments is msgspec.UNSET:
        return decided(check, "tool_called", True, f"{tool} was called.")
    calls = _calls_of(context, check.tool)
    difference = closest(calls, check.arguments, matching(check.arguments_match))
    if difference.words is None:
        return decided(
            check, "tool_called", True, f"{tool} was called with the expected arguments."
        )
    closest_of = "" if len(calls) == 1 else f" (the closest of its {len(calls)} calls)"
    detail = f"{tool} was called with {difference.words}{closest_of}."
    return decided(check, "tool_called", False, detail)


def _calls_of(context: GradingContext, tool: str) -> list[ToolCall]:
    return [call for call in context.observation.tool_calls or () if call.name == tool]


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
    """Passes when the tools appear in this order as a subsequence (repeats must repeat), each
    entry that lists arguments matched by a call with them."""
    steps = check.tools
    calls = context.observation.tool_calls or ()
    matched = 0
    after_last = 0  # where the calls after the last matched one start
    # Greedy matching finds a subsequence whenever one exists: each entry takes the earliest
    # call after the previous one that fits it, which leaves the most calls for the rest.
    for index, call in enumerate(calls):
        if matched == len(steps):
            break
        step = steps[matched]
        # A step named only (the usual) is compared here: a call per step costs a tenth.
        if call.name == step if isinstance(step, str) else _fits(step, call, check):
            matched += 1
            after_last = index + 1
    order = _order(check.step_names())
    if matched == len(steps):
        detail = f"The tools were called in this order: {order}."
        return decided(check, "tool_order", True, detail)
    detail = f"Expected the tools in this order: {order}. "
    missing = steps[matched]
    if isinstance(missing, ToolStep):
        after = [call for call in calls[after_last:] if call.name == missing.tool]
        if after:
            words = closest(after, missing.arguments, matching(check.arguments_match)).words
            detail += f"{shorten(missing.tool, VALUE_CHARS)} was called with {words}. "
    return decided(check, "tool_order", False, detail + context.tool_report())


def _fits(step: ToolStep, call: ToolCall, check: ToolOrder) -> bool:
    if call.name != step.tool:
        return False
    return compare(call.arguments, step.arguments, matching(check.arguments_match)).words is None


def grade_max_tool_calls(check: MaxToolCalls, context: GradingContext) -> CheckResult:
    """Passes when there were at most `count` calls (of the named tool) and every reported
    entry could be read (one that could not might have been such a call)."""
    sequence = context.tool_sequence()
    only = named_tool(check.tool)
    made = len(sequence) if only is None else sequence.count(only)
    tool = None if only is None else shorten(only, VALUE_CHARS)
    singular, plural = (
        ("tool call", "tool calls") if tool is None else (f"call of {tool}", f"calls of {tool}")
    )
    allowed = f"at most {check.count} allowed"
    if made > check.count:
        detail = f"The agent made {count_noun(made, singular, plural)}; {allowed}. "
        return decided(check, "max_tool_calls", False, detail + context.tool_report())
    if context.observation.unreadable_tool_calls:
        unsure = (
            f"Cannot confirm the agent made at most {count_noun(check.count, singular, plural)}."
        )
        return decided(check, "max_tool_calls", False, unsure + context.unreadable_note())
    detail = f"The agent made {count_noun(made, singular, plural)}; {allowed}."
    return decided(check, "max_tool_calls", True, detail)


# Held per distinct order: a run's cases share a few, and a passing check's detail is this
# name list, which costs more than finding the order did.
@functools.lru_cache(maxsize=1024)
def _order(tools: tuple[str, ...]) -> str:
    """`a -> b -> c`, shortened when long."""
    return name_list(tools, " -> ")
