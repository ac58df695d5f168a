"""Comparing a call's arguments with the ones a check expects (contract section 17).

Subset: every listed key is there with an equal value (JSON equality: 1 equals 1.0, true is
not 1) or a value its matcher accepts. Exact: that, and no key that is not listed. A call's
arguments sent as a JSON string were decoded when the call was read (tool_calls.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from agentlasso.domain.grades import ToolCall
from agentlasso.domain.tool_arguments import ArgumentsMatch, is_matcher, is_number
from agentlasso.grading.excerpts import VALUE_CHARS, quoted, shorten
from agentlasso.grading.patterns import MAX_SEARCH_COST, compile_pattern, search, search_cost


class Difference(NamedTuple):
    """Where a call's arguments first part from the expected ones, in words."""

    # How close the call came: listed keys that matched, then listed keys it had at all.
    closeness: tuple[int, int]
    # `amount 50; expected 42`, or None when the arguments match.
    words: str | None


def compare(arguments: object, expected: Mapping[str, Any], how: ArgumentsMatch) -> Difference:
    """How a call's arguments compare with the expected ones."""
    if not isinstance(arguments, dict):
        shown = "no arguments" if arguments is None else f"arguments {_shown(arguments)}"
        return Difference((0, 0), f"{shown}, not an object of arguments")
    if _all_hold(arguments, expected) and (how == "subset" or arguments.keys() <= expected.keys()):
        return _MATCHED  # the usual case: no difference to put in words
    matched = 0
    first: str | None = None
    for key, want in expected.items():
        words = _key_difference(key, arguments, want)
        if words is None:
            matched += 1
        elif first is None:
            first = words
    present = sum(key in arguments for key in expected)
    if first is None:
        # Every listed key holds: what failed is a key an exact match does not allow.
        extra = next(key for key in arguments if key not in expected)
        first = f"{_key(extra)} {_shown(arguments[extra])}, which the check does not list"
    return Difference((matched, present), first)


_MATCHED = Difference((0, 0), None)


def _all_hold(arguments: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """Whether every listed key holds (a loop: the hot path of a check listing arguments)."""
    for key, want in expected.items():  # noqa: SIM110
        if not _holds(arguments, key, want):
            return False
    return True


def _holds(arguments: Mapping[str, Any], key: str, want: Any) -> bool:
    """Whether the arguments hold this listed key as the check expects it."""
    if key not in arguments:
        return False
    return _accepts(want, arguments[key]) if is_matcher(want) else json_equal(arguments[key], want)


def closest(
    calls: Sequence[ToolCall], expected: Mapping[str, Any], how: ArgumentsMatch
) -> Difference:
    """The difference of the call that comes closest (most listed keys matching, then most
    listed keys there; the first such call on a tie), or None words when one matches."""
    best: Difference | None = None
    for call in calls:
        difference = compare(call.arguments, expected, how)
        if difference.words is None:
            return difference
        if best is None or difference.closeness > best.closeness:
            best = difference
    assert best is not None, "closest() is asked only about calls that were made"
    return best


def _key_difference(key: str, arguments: Mapping[str, Any], want: Any) -> str | None:
    if key not in arguments:
        return f"no {_key(key)}; expected {_expected(want)}"
    got = arguments[key]
    if _holds(arguments, key, want):
        return None
    return f"{_key(key)} {_shown(got)}; expected {_expected(want)}"


def json_equal(left: object, right: object) -> bool:
    """Equality of two JSON values: numbers by value, booleans apart from numbers."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    return type(left) is type(right) and left == right


def _accepts(matcher: Mapping[str, Any], value: object) -> bool:
    """Whether a value meets every operator of a matcher (write time refused bad operators)."""
    for operator, operand in matcher.items():
        if operator == "$regex":
            if not isinstance(value, str) or not _search(operand, value):
                return False
        elif operator in ("$gte", "$lte"):
            if not is_number(value) or not is_number(operand):
                return False
            if (value < operand) if operator == "$gte" else (value > operand):
                return False
        elif operator != "$any":
            return False  # an operator the write-time check let through: never a pass
    return True


def _search(pattern: object, value: str) -> bool:
    """Whether an RE2 pattern matches in the value (case-insensitive, as section 4)."""
    regex, _ = compile_pattern(pattern) if isinstance(pattern, str) else (None, None)
    encoded = value.encode("utf-8", "replace")
    if regex is None or search_cost(regex, encoded) > MAX_SEARCH_COST:
        return False  # a pattern that cannot run matches nothing: never a pass unverified
    return search(regex, encoded) is not None


def _expected(want: Any) -> str:
    """An expected value or matcher in words."""
    if not is_matcher(want):
        return _shown(want)
    return " and ".join(
        words for op, operand in want.items() if (words := _operator_words(op, operand))
    )


def _operator_words(operator: str, operand: Any) -> str:
    if operator == "$regex":
        return f"a match for /{shorten(str(operand), VALUE_CHARS)}/"
    if operator == "$gte":
        return f"at least {_shown(operand)}"
    if operator == "$lte":
        return f"at most {_shown(operand)}"
    return "any value" if operator == "$any" else ""


def _key(key: str) -> str:
    return shorten(key, VALUE_CHARS)


def _shown(value: object) -> str:
    """A JSON value as a detail quotes it: strings in quotes, the rest as compact JSON."""
    if isinstance(value, str):
        return quoted(value)
    # Arguments were decoded from JSON, so they encode back (an int past 64 bits included).
    return shorten(msgspec.json.encode(value).decode(), VALUE_CHARS)
