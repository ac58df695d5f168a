"""Our tool checks against a peer nobody here wrote: LangChain's agentevals trajectory match.

For each agentevals mode (strict, unordered, subset, superset) and arguments mode (exact,
ignore, subset, superset), CORRESPONDENCE names the checks a person writes here for the same
intent, and the verdicts must agree on a generated table of trajectories, leaving out only the
pairs where a difference listed in DIFFERENCES may show. Each difference is a named case whose
verdicts are asserted to differ, so the list stays true; docs/concepts/agentevals.md lists them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import pytest

from agentlasso.domain.checks import Check
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case, observation_from_wire
from agentlasso.grading.written_checks import written_check_problems
from tests.support.trajectories import (
    TOOLS,
    Arguments,
    Message,
    Trajectory,
    agentevals_verdict,
    generated_pairs,
    messages,
    wire_calls,
)

CheckSpec = dict[str, Any]
PAIRS = generated_pairs(300, seed=17)
DOCS = Path(__file__).resolve().parents[3] / "docs" / "concepts" / "agentevals.md"
# agentevals' arguments mode -> ours; its "ignore" is our default (no `arguments`).
ARGUMENTS_MATCH = {"exact": "exact", "superset": "subset"}


def our_verdict(checks: list[CheckSpec], actual: list[Message]) -> bool:
    """Whether a case with these checks passes on the actual trajectory's tool calls."""
    written = tuple(
        msgspec.convert({**spec, "id": f"c{index}"}, Check) for index, spec in enumerate(checks, 1)
    )
    assert [written_check_problems(check) for check in written] == [[]] * len(written)
    observation = observation_from_wire("Done.", wire_calls(actual))
    result = grade_case(TestCaseContent(input="q", checks=written), observation)
    assert result.graded
    return result.pass_fail


def _tool_called(name: str, arguments: Arguments, args_mode: str) -> CheckSpec:
    if args_mode == "ignore":
        return {"type": "tool_called", "tool": name}
    match = ARGUMENTS_MATCH[args_mode]
    return {"type": "tool_called", "tool": name, "arguments": arguments, "arguments_match": match}


def superset_checks(reference: Trajectory, args_mode: str) -> list[CheckSpec]:
    """Every reference call was made (in any order): one tool_called per call."""
    return [_tool_called(name, arguments, args_mode) for name, arguments in reference]


def unordered_checks(reference: Trajectory, args_mode: str) -> list[CheckSpec]:
    """The reference calls and no others, in any order: those, and no more calls than it has."""
    most = {"type": "max_tool_calls", "count": len(reference)}
    return [*superset_checks(reference, args_mode), most]


def strict_checks(reference: Trajectory, args_mode: str) -> list[CheckSpec]:
    """The reference calls in order: a tool_order (a subsequence) and as many calls, no more."""
    order: CheckSpec = {"type": "tool_order"}
    if args_mode == "ignore":
        order["tools"] = [name for name, _ in reference]
    else:
        order["tools"] = [{"tool": name, "arguments": args} for name, args in reference]
        order["arguments_match"] = ARGUMENTS_MATCH[args_mode]
    return [order, {"type": "max_tool_calls", "count": len(reference)}]


def subset_checks(reference: Trajectory, args_mode: str) -> list[CheckSpec]:
    """Only reference calls, each at most as often: the agent's other tools forbidden, the
    reference's tools each limited to its count (no check limits a call's arguments)."""
    counts = Counter(name for name, _ in reference)
    forbidden = [{"type": "tool_not_called", "tool": tool} for tool in TOOLS if tool not in counts]
    limits = [{"type": "max_tool_calls", "tool": t, "count": n} for t, n in counts.items()]
    return forbidden + limits


# agentevals' own matchers (trajectory/utils.py), with Python's ==, to find the pairs where
# one actual call could answer two reference calls.
Fits = Callable[[Arguments, Arguments], bool]
FITS: dict[str, Fits] = {
    "exact": lambda reference, actual: actual == reference,
    "superset": lambda reference, actual: all(
        key in actual and actual[key] == value for key, value in reference.items()
    ),
    "ignore": lambda reference, actual: True,
}


def boolean_for_number(reference: Trajectory, actual: Trajectory, fits: Fits) -> bool:
    """Whether calls of one tool hold, under one key, values Python finds equal where one is
    a boolean and the other a number (true and 1, at any depth)."""
    return any(
        ref_name == name and any(_bool_for_number(ref[k], args[k]) for k in ref.keys() & args)
        for ref_name, ref in reference
        for name, args in actual
    )


def _bool_for_number(left: Any, right: Any) -> bool:
    if left != right:
        return False
    if isinstance(left, dict) and isinstance(right, dict):
        return any(_bool_for_number(left[key], right[key]) for key in left)
    return isinstance(left, bool) != isinstance(right, bool)


def one_call_fits_two(reference: Trajectory, actual: Trajectory, fits: Fits) -> bool:
    """Whether one actual call fits two reference calls (otherwise any pairing is one-to-one,
    and agentevals' first-fit pairing finds one whenever a check per call passes)."""
    return any(
        sum(ref_name == name and fits(ref, args) for ref_name, ref in reference) > 1
        for name, args in actual
    )


Condition = Callable[[Trajectory, Trajectory, Fits], bool]
# Where a generated pair is left out, and the differences that explain it.
CONDITIONS: dict[str, tuple[Condition, tuple[str, ...]]] = {
    "boolean-for-number": (boolean_for_number, ("boolean-is-not-1",)),
    "one-call-fits-two": (one_call_fits_two, ("one-call-answers-two-checks", "first-fit-pairing")),
}


class Correspondence(NamedTuple):
    """Our checks for one agentevals mode and arguments mode, and where the two part."""

    checks: Callable[[Trajectory, str], list[CheckSpec]]
    apart: tuple[str, ...]


CORRESPONDENCE: dict[tuple[str, str], Correspondence] = {
    ("strict", "exact"): Correspondence(strict_checks, ("boolean-for-number",)),
    ("strict", "superset"): Correspondence(strict_checks, ("boolean-for-number",)),
    ("strict", "ignore"): Correspondence(strict_checks, ()),
    ("unordered", "exact"): Correspondence(
        unordered_checks, ("boolean-for-number", "one-call-fits-two")
    ),
    ("unordered", "ignore"): Correspondence(unordered_checks, ("one-call-fits-two",)),
    ("superset", "exact"): Correspondence(
        superset_checks, ("boolean-for-number", "one-call-fits-two")
    ),
    ("superset", "superset"): Correspondence(
        superset_checks, ("boolean-for-number", "one-call-fits-two")
    ),
    ("superset", "ignore"): Correspondence(superset_checks, ("one-call-fits-two",)),
    ("subset", "ignore"): Correspondence(subset_checks, ()),
}
# The modes nothing of ours corresponds to, and the difference that says why.
NO_EQUIVALENT = {
    ("strict", "subset"): "same-word-subset",
    ("unordered", "subset"): "same-word-subset",
    ("superset", "subset"): "same-word-subset",
    ("unordered", "superset"): "unordered-arguments-both-ways",
    ("subset", "exact"): "subset-mode-arguments",
    ("subset", "subset"): "subset-mode-arguments",
    ("subset", "superset"): "subset-mode-arguments",
}


def test_every_agentevals_mode_is_mapped_or_explained() -> None:
    modes = {(m, a) for m in ("strict", "unordered", "subset", "superset") for a in FITS}
    modes |= {(m, "subset") for m in ("strict", "unordered", "subset", "superset")}
    assert CORRESPONDENCE.keys() | NO_EQUIVALENT.keys() == modes
    assert not CORRESPONDENCE.keys() & NO_EQUIVALENT.keys()
    assert set(NO_EQUIVALENT.values()) <= DIFFERENCES.keys()


@pytest.mark.parametrize(
    ("mode", "args_mode"), list(CORRESPONDENCE), ids=[f"{m}-{a}" for m, a in CORRESPONDENCE]
)
def test_verdicts_agree_on_the_generated_table(mode: str, args_mode: str) -> None:
    correspondence = CORRESPONDENCE[mode, args_mode]
    agreed: Counter[bool] = Counter()
    disagreements, reached = [], set()
    for reference, actual in PAIRS:
        theirs = agentevals_verdict(mode, args_mode, messages(reference), messages(actual))
        ours = our_verdict(correspondence.checks(reference, args_mode), messages(actual))
        apart = [
            name
            for name in correspondence.apart
            if CONDITIONS[name][0](reference, actual, FITS[args_mode])
        ]
        if not apart:
            agreed[theirs] += 1
            if ours != theirs:
                disagreements.append((reference, actual, theirs))
        elif ours != theirs and len(apart) == 1:
            reached.add(apart[0])
    assert disagreements == []
    # Enough pairs kept, passing and failing, for the agreement to mean something.
    assert agreed[True] >= 25 and agreed[False] >= 25, agreed
    # Each condition a pair was left out for really parts the verdicts in the table.
    assert reached == set(correspondence.apart)


class Difference(NamedTuple):
    """A case where agentevals and our checks for the same intent part, on purpose."""

    reason: str
    mode: str
    args_mode: str
    reference: list[Message]
    actual: list[Message]
    checks: list[CheckSpec]
    agentevals: bool  # its verdict; ours is the other
    overrides: dict[str, Any] | None = None


def _trajectory(*calls: tuple[str, Arguments]) -> Trajectory:
    return tuple(calls)


ONE_REFUND = _trajectory(("refund", {"id": 1}))
REFUND_AND_MORE = _trajectory(("refund", {"id": 1, "n": 2}))
DIFFERENCES: dict[str, Difference] = {
    "boolean-is-not-1": Difference(
        "Python's == finds true equal to 1; JSON equality, ours, does not (1 and 1.0 are "
        "equal in both).",
        "superset",
        "exact",
        messages([("refund", {"n": 1})]),
        messages([("refund", {"n": True})]),
        superset_checks(_trajectory(("refund", {"n": 1})), "exact"),
        agentevals=True,
    ),
    "one-call-answers-two-checks": Difference(
        "agentevals pairs each reference call with a call of its own; a tool_called check "
        "passes on any call, so two equal checks pass on one call (a tool_order of the two "
        "counts them, in order).",
        "superset",
        "ignore",
        messages([("lookup", {}), ("lookup", {})]),
        messages([("lookup", {})]),
        superset_checks(_trajectory(("lookup", {}), ("lookup", {})), "ignore"),
        agentevals=False,
    ),
    "first-fit-pairing": Difference(
        "agentevals gives each reference call the first call that fits it, never revisited: "
        "the wider call taken by the narrower reference call is not there for the wider one, "
        "though a one-to-one pairing exists.",
        "superset",
        "superset",
        messages([*ONE_REFUND, *REFUND_AND_MORE]),
        messages([*REFUND_AND_MORE, *ONE_REFUND]),
        superset_checks((*ONE_REFUND, *REFUND_AND_MORE), "superset"),
        agentevals=False,
    ),
    "same-word-subset": Difference(
        "agentevals \"subset\" arguments are the call's arguments within the reference's "
        "(keys may be left out); our `subset` is the check's arguments within the call's (its "
        '"superset"). Nothing of ours passes a call that left out a listed key.',
        "superset",
        "subset",
        messages(REFUND_AND_MORE),
        messages(ONE_REFUND),
        superset_checks(REFUND_AND_MORE, "superset"),
        agentevals=True,
    ),
    "unordered-arguments-both-ways": Difference(
        "agentevals unordered matches both ways, so a call's extra keys fail its "
        '"superset" arguments too; ours allows extra keys unless the check says exact.',
        "unordered",
        "superset",
        messages(ONE_REFUND),
        messages(REFUND_AND_MORE),
        unordered_checks(ONE_REFUND, "superset"),
        agentevals=False,
    ),
    "subset-mode-arguments": Difference(
        "No check of ours limits the arguments of a call that need not be made: subset mode "
        "maps to tool_not_called and max_tool_calls, which read names only.",
        "subset",
        "exact",
        messages(ONE_REFUND),
        messages([("refund", {"id": 2})]),
        subset_checks(ONE_REFUND, "exact"),
        agentevals=False,
    ),
    "unnamed-tool": Difference(
        "tool_not_called forbids a tool by name; agentevals subset refuses any tool the "
        "reference does not call, named or not.",
        "subset",
        "ignore",
        messages([("lookup", {})]),
        messages([("lookup", {}), ("email.send", {})]),
        subset_checks(_trajectory(("lookup", {})), "ignore"),
        agentevals=False,
    ),
    "parallel-calls": Difference(
        "agentevals strict lets the calls inside one assistant message come in any order; "
        "we read the calls as one list, in the order sent.",
        "strict",
        "ignore",
        messages([("lookup", {}), ("refund", {})], parallel=True),
        messages([("refund", {}), ("lookup", {})], parallel=True),
        strict_checks(_trajectory(("lookup", {}), ("refund", {})), "ignore"),
        agentevals=True,
    ),
    "messages-not-only-calls": Difference(
        "agentevals strict compares every message's role, so an extra assistant message "
        "fails it; our tool checks read the tool calls only.",
        "strict",
        "ignore",
        messages(ONE_REFUND),
        [
            *messages([])[:1],
            {"role": "assistant", "content": "A moment."},
            *messages(ONE_REFUND)[1:],
        ],
        strict_checks(ONE_REFUND, "ignore"),
        agentevals=False,
    ),
}
