"""Expected tool arguments, when a tool check asks for them (contract section 17).

Names only stay the default: a check compares arguments only when it lists them. Then every
listed key must be there with an equal value (JSON equality), or a value a matcher accepts;
`exact` also refuses keys that are not listed. Nothing fuzzier: loose matching passes
invented arguments.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

import msgspec

from agentlasso.domain.json_pointers import json_pointer

ArgumentsMatch = Literal["subset", "exact"]
# An object of expected values, keyed by argument name (a value may be a matcher).
ExpectedArguments = Annotated[dict[str, Any], msgspec.Meta(max_length=100)]
ToolName = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]

# A matcher is an object whose keys are all operators; they may combine ($gte with $lte).
MATCHERS = ("$regex", "$gte", "$lte", "$any")


class ToolStep(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """One entry of a tool order that also names the arguments of that call."""

    tool: ToolName
    arguments: ExpectedArguments


def matching(how: ArgumentsMatch | msgspec.UnsetType) -> ArgumentsMatch:
    """How a check compares arguments: subset unless it says exact."""
    return "subset" if how is msgspec.UNSET else how


def named_tool(tool: str | msgspec.UnsetType) -> str | None:
    """The tool a check is limited to, or None for every tool."""
    return None if tool is msgspec.UNSET else tool


def is_matcher(value: object) -> bool:
    """Whether an expected value is a matcher (an object of `$` operators) rather than a value."""
    if not isinstance(value, dict) or not value:
        return False
    # A loop, not all() over a generator: this runs for every listed argument of every case.
    for key in value:  # noqa: SIM110
        if not str(key).startswith("$"):
            return False
    return True


def matcher_problems(arguments: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(pointer below the arguments, what is wrong) for each matcher that cannot be used."""
    for key, value in arguments.items():
        pointer = json_pointer([key])
        if is_matcher(value):
            yield from _operator_problems(pointer, value)
        elif _holds_operator(value):
            detail = (
                "A matcher ($regex, $gte, $lte, $any) stands for a whole argument value: it "
                "cannot sit inside another value or beside other keys."
            )
            yield pointer, detail


def _operator_problems(pointer: str, matcher: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for operator, operand in matcher.items():
        where = f"{pointer}/{operator}"
        if operator not in MATCHERS:
            yield where, f"{operator} is not a matcher; use one of {', '.join(MATCHERS)}."
        elif operator == "$regex" and not isinstance(operand, str):
            yield where, "$regex takes a regular expression (a string)."
        elif operator in ("$gte", "$lte") and not is_number(operand):
            yield where, f"{operator} takes a number."
        elif operator == "$any" and operand is not True:
            yield where, "$any takes true (the argument is there, with any value)."


def _holds_operator(value: object) -> bool:
    """Whether a plain value has a `$` key anywhere inside it."""
    if isinstance(value, dict):
        return any(str(key).startswith("$") or _holds_operator(v) for key, v in value.items())
    if isinstance(value, list):
        return any(_holds_operator(item) for item in value)
    return False


def is_number(value: object) -> bool:
    """A JSON number: an int or float, never a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool)
