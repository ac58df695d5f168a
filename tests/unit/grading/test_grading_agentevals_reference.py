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
Fits = Callable[[str, Arguments, Arguments], bool]  # (tool, reference's, call's arguments)
FITS: dict[str, Fits] = {
    "exact": lambda tool, reference, actual: actual == reference,
    "superset": lambda tool, reference, actual: all(
        key in actual and actual[key] == value for key, value in reference.items()
    ),
    "ignore": lambda tool, reference, actual: True,
}


def boolean_for_number(reference: Trajectory, actual: Trajectory, fits: Fits) -> bool:
    """Whether calls of one tool hold, under one key, values Python finds equal where one is
    a boolean and the other a number (true and 1, at any depth), whatever fits."""
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
    if isinstance(left, list) and isinstance(right, list):
        return any(map(_bool_for_number, left, right))
    return isinstance(left, bool) != isinstance(right, bool)


def one_call_fits_two(reference: Trajectory, actual: Trajectory, fits: Fits) -> bool:
    """Whether one actual call fits two reference calls (otherwise any pairing is one-to-one,
    and agentevals' first-fit pairing finds one whenever a check per call passes)."""
    return any(
        sum(ref_name == name and fits(name, ref, args) for ref_name, ref in reference) > 1
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
    modes = {
        (mode, args_mode)
        for mode in ("strict", "unordered", "subset", "superset")
        for args_mode in ("exact", "ignore", "subset", "superset")
    }
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
    "regex-matcher": Difference(
        "Our $regex (RE2, case-insensitive) has no agentevals mode; there it takes a callable "
        "override, code the test case cannot carry.",
        "superset",
        "superset",
        messages([("search", {"q": "order 42"})]),
        messages([("search", {"q": "Order #42"})]),
        [{"type": "tool_called", "tool": "search", "arguments": {"q": {"$regex": "order.*42"}}}],
        agentevals=False,
    ),
    "bounds-matcher": Difference(
        "Our $gte and $lte (and $any) have no agentevals mode either: a callable override.",
        "superset",
        "superset",
        messages([("refund", {"n": 42})]),
        messages([("refund", {"n": 40})]),
        [{"type": "tool_called", "tool": "refund", "arguments": {"n": {"$gte": 1, "$lte": 50}}}],
        agentevals=False,
    ),
    "nested-key-path": Difference(
        "An agentevals field list may name a nested key (`opts.x`); we compare a listed "
        "key's value whole, so a nested value is listed whole.",
        "superset",
        "exact",
        messages([("search", {"opts": {"x": 1, "y": "a"}})]),
        messages([("search", {"opts": {"x": 1, "y": "b"}})]),
        [{"type": "tool_called", "tool": "search", "arguments": {"opts": {"x": 1}}}],
        agentevals=True,
        overrides={"search": ["opts.x"]},
    ),
    "missing-reads-as-null": Difference(
        "An agentevals field list reads a missing key as null; we require a listed key.",
        "superset",
        "exact",
        messages([("refund", {"id": 7, "n": None})]),
        messages([("refund", {"id": 7})]),
        [{"type": "tool_called", "tool": "refund", "arguments": {"id": 7, "n": None}}],
        agentevals=True,
        overrides={"refund": ["id", "n"]},
    ),
    "empty-field-list": Difference(
        "An empty agentevals field list is no override (the arguments mode applies); a check "
        "that lists no arguments compares none.",
        "superset",
        "exact",
        messages([("refund", {"id": 7})]),
        messages([("refund", {"id": 8})]),
        [{"type": "tool_called", "tool": "refund"}],
        agentevals=False,
        overrides={"refund": []},
    ),
}


@pytest.mark.parametrize("name", list(DIFFERENCES))
def test_the_listed_differences_occur(name: str) -> None:
    case = DIFFERENCES[name]
    theirs = agentevals_verdict(
        case.mode, case.args_mode, case.reference, case.actual, case.overrides
    )
    assert (theirs, our_verdict(case.checks, case.actual)) == (case.agentevals, not theirs)


def test_the_docs_list_every_difference() -> None:
    _, differences = DOCS.read_text(encoding="utf-8").split("## Where they differ")
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", differences, re.M))
    assert listed == DIFFERENCES.keys()


def _field_list(reference: Trajectory) -> tuple[str, list[str]] | None:
    """The first reference call's tool and some keys every reference call of it has (one
    left out when there are several), or None when they share none."""
    tool = reference[0][0]
    shared = set.intersection(*(set(args) for name, args in reference if name == tool))
    keys = sorted(shared)[: max(1, len(shared) - 1)]
    return (tool, keys) if keys else None


def _listed(reference: Trajectory, tool: str, keys: list[str]) -> Trajectory:
    """The reference with that tool's calls' arguments cut to the listed keys."""
    return tuple(
        (name, {k: args[k] for k in keys} if name == tool else args) for name, args in reference
    )


def _overridden_checks(
    mode: str, reference: Trajectory, tool: str, keys: list[str]
) -> list[CheckSpec]:
    listed = _listed(reference, tool, keys)
    if mode == "strict":
        return strict_checks(listed, "superset")  # the arguments mode is superset: ours subset
    return [
        _tool_called(name, args, "superset" if name == tool else "exact") for name, args in listed
    ]


def _field_fits(tool: str, keys: list[str], args_mode: str) -> Fits:
    """agentevals' matching with a field list for one tool: those keys equal, missing as null."""

    def fits(name: str, reference: Arguments, actual: Arguments) -> bool:
        if name == tool:
            return all(actual.get(key) == reference.get(key) for key in keys)
        return FITS[args_mode](name, reference, actual)

    return fits


@pytest.mark.parametrize(("mode", "args_mode"), [("superset", "exact"), ("strict", "superset")])
def test_a_field_list_override_agrees_with_a_check_listing_those_keys(
    mode: str, args_mode: str
) -> None:
    compared, apart = Counter[bool](), CORRESPONDENCE[mode, args_mode].apart
    for reference, actual in PAIRS:
        if (fields := _field_list(reference)) is None:
            continue
        tool, keys = fields
        fits = _field_fits(tool, keys, args_mode)
        if any(CONDITIONS[name][0](reference, actual, fits) for name in apart):
            continue
        theirs = agentevals_verdict(
            mode, args_mode, messages(reference), messages(actual), {tool: keys}
        )
        checks = _overridden_checks(mode, reference, tool, keys)
        assert our_verdict(checks, messages(actual)) == theirs, (reference, actual, keys)
        compared[theirs] += 1
    assert compared[True] >= 25 and compared[False] >= 25, compared


def test_a_callable_override_stands_where_we_have_a_matcher() -> None:
    case = DIFFERENCES["regex-matcher"]
    pattern = re.compile("order.*42", re.IGNORECASE)

    def matcher(actual: Arguments, reference: Arguments) -> bool:
        return bool(pattern.search(str(actual.get("q", ""))))

    overrides = {"search": matcher}
    theirs = agentevals_verdict(case.mode, case.args_mode, case.reference, case.actual, overrides)
    assert theirs is our_verdict(case.checks, case.actual) is True


def test_agentevals_subset_mode_reads_its_arguments_modes_the_other_way() -> None:
    """Subset mode hands agentevals' matcher the reference's arguments first, so its "superset"
    arguments there mean the call's within the reference's (the docs say so)."""
    wider, narrower = messages(REFUND_AND_MORE), messages(ONE_REFUND)
    assert agentevals_verdict("subset", "superset", reference=wider, actual=narrower) is True
    assert agentevals_verdict("subset", "superset", reference=narrower, actual=wider) is False
    assert agentevals_verdict("superset", "superset", reference=narrower, actual=wider) is True
