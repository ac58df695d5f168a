"""The one line a person reads in a CI log about a case (`judge_reasoning`)."""

from __future__ import annotations

import msgspec

from agentlasso.domain.grades import CheckResult, UngradedItem
from agentlasso.grading.excerpts import count_noun
from agentlasso.grading.plan import CasePlan

# Most checks named per group; a case with hundreds of failures still gets one short line.
_NAMED = 10


class Tally(msgspec.Struct, frozen=True, gc=False):
    """A case's check results sorted for the line (a Struct: built once per case, and a
    NamedTuple's constructor costs four times as much)."""

    graded: int
    passed: int
    failed_critical: list[CheckResult]
    failed_minor: list[CheckResult]
    ungraded: list[CheckResult]


def reasoning_line(tally: Tally, plan: CasePlan, causes: tuple[str, ...] = ()) -> str:
    """E.g. `4/5 checks passed; failed (minor): c5 output_valid_json. Not graded: 1 ...`."""
    line = _tally_line(tally, plan)
    return " ".join((line, *causes))


def _tally_line(tally: Tally, plan: CasePlan) -> str:
    if tally.graded:
        head = f"{tally.passed}/{tally.graded} checks passed"
    elif tally.ungraded:
        head = "No check could be graded"
    else:
        head = "No checks, so the case is not graded"
        if plan.criteria_ignored:
            head += " (evaluation_criteria_json is not read: the case has a checks list)"
    if tally.failed_critical:
        head += f"; failed (critical): {_named(tally.failed_critical)}"
    if tally.failed_minor:
        head += f"; failed (minor): {_named(tally.failed_minor)}"
    if tally.ungraded or plan.ungraded_items:
        return f"{head}. Not graded: {_ungraded(tally.ungraded, plan.ungraded_items)}."
    return f"{head}."


def _named(results: list[CheckResult]) -> str:
    """`c1 tool_called, turn 3: c4 tool_called`, cut after ten."""
    names = ", ".join(f"{_turn(r)}{r.id} {r.type}" for r in results[:_NAMED])
    hidden = len(results) - _NAMED
    return f"{names} and {hidden} more" if hidden > 0 else names


def _ungraded(checks: list[CheckResult], items: tuple[UngradedItem, ...]) -> str:
    """Ungraded checks with their severity, then counts of ungraded items."""
    parts = [f"{_turn(r)}{r.id} {r.type} ({r.severity})" for r in checks[:_NAMED]]
    if len(checks) > _NAMED:
        parts.append(f"{len(checks) - _NAMED} more checks")
    free_text = sum(1 for item in items if item.kind == "free_text_rubric_item")
    if free_text:
        parts.append(count_noun(free_text, "free-text rubric item"))
    unreadable = len(items) - free_text
    if unreadable:
        parts.append(count_noun(unreadable, "unreadable criterion", "unreadable criteria"))
    return ", ".join(parts)


def _turn(result: CheckResult) -> str:
    """`turn 3: ` before a conversation's turn check, nothing before any other."""
    return "" if result.turn is msgspec.UNSET else f"turn {result.turn}: "
