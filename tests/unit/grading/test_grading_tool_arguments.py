"""Tool arguments, when a check lists them (contract section 17): subset and exact, matchers,
a JSON string of arguments parsed first, the closest call named with the first key that
differed; and the write-time rules for matchers."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from agentlasso.domain.checks import Check, ToolCalled, ToolOrder
from agentlasso.domain.grades import CheckResult
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.domain.tool_arguments import ToolStep, matcher_problems
from agentlasso.grading import grade_case, observation_from_wire
from agentlasso.grading.tool_arguments import json_equal
from agentlasso.grading.written_checks import written_check_problems


def grade_one(check: Check, calls: list[dict[str, Any]]) -> CheckResult:
    observation = observation_from_wire("reply", calls)
    return grade_case(TestCaseContent(input="q", checks=(check,)), observation).check_results[0]


def call(name: str, arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def refund(arguments: dict[str, Any], match: str = "subset") -> Check:
    return msgspec.convert(
        {
            "type": "tool_called",
            "id": "c1",
            "tool": "stripe.refund",
            "arguments": arguments,
            "arguments_match": match,
        },
        Check,
    )


@pytest.mark.parametrize(
    ("check", "calls", "passed", "detail"),
    [
        pytest.param(
            refund({"amount": 42}),
            [call("stripe.refund", {"amount": 42, "currency": "usd"})],
            True,
            "stripe.refund was called with the expected arguments.",
            id="subset-extra-keys-allowed",
        ),
        pytest.param(
            refund({"amount": 42}),
            [call("stripe.refund", {"amount": 50})],
            False,
            "stripe.refund was called with amount 50; expected 42.",
            id="value-differs",
        ),
        pytest.param(
            refund({"amount": 42}),
            [call("stripe.refund", '{"amount": 42}')],
            True,
            "stripe.refund was called with the expected arguments.",
            id="json-string-parsed",
        ),
        pytest.param(
            refund({"amount": 42}),
            [call("stripe.refund", {"amount": 42.0})],
            True,
            "stripe.refund was called with the expected arguments.",
            id="json-number-equality",
        ),
        pytest.param(
            refund({"refund": True}),
            [call("stripe.refund", {"refund": 1})],
            False,
            "stripe.refund was called with refund 1; expected true.",
            id="true-is-not-1",
        ),
        pytest.param(
            refund({"order_id": "A1"}),
            [call("stripe.refund", {"amount": 42})],
            False,
            'stripe.refund was called with no order_id; expected "A1".',
            id="key-missing",
        ),
        pytest.param(
            refund({"amount": 42}, "exact"),
            [call("stripe.refund", {"amount": 42, "memo": "x"})],
            False,
            'stripe.refund was called with memo "x", which the check does not list.',
            id="exact-refuses-extra-keys",
        ),
        pytest.param(
            refund({"amount": 42}, "exact"),
            [call("stripe.refund", {"amount": 42})],
            True,
            "stripe.refund was called with the expected arguments.",
            id="exact-equal",
        ),
        pytest.param(
            refund({"items": [{"sku": "a", "qty": 1}]}),
            [call("stripe.refund", {"items": [{"sku": "a", "qty": 1, "note": ""}]})],
            False,
            'stripe.refund was called with items [{"sku":"a","qty":1,"note":""}]; '
            'expected [{"sku":"a","qty":1}].',
            id="nested-values-compare-whole",
        ),
        pytest.param(
            refund({"amount": 42}),
            [
                call("stripe.refund", {"currency": "usd"}),
                call("stripe.refund", {"amount": 41, "order": 1}),
            ],
            False,
            "stripe.refund was called with amount 41; expected 42 (the closest of its 2 calls).",
            id="closest-call-named",
        ),
        pytest.param(
            refund({"a": 1, "b": 2}),
            [call("stripe.refund", {"a": 0, "b": 0}), call("stripe.refund", {"a": 1, "b": 3})],
            False,
            "stripe.refund was called with b 3; expected 2 (the closest of its 2 calls).",
            id="closest-is-most-keys-matched",
        ),
        pytest.param(
            refund({"amount": 42}),
            [call("stripe.refund", {"amount": 1}), call("stripe.refund", {"amount": 42})],
            True,
            "stripe.refund was called with the expected arguments.",
            id="any-call-may-match",
        ),
        pytest.param(
            refund({"amount": 42}),
            [call("stripe.refund", "not json")],
            False,
            'stripe.refund was called with arguments "not json", not an object of arguments.',
            id="arguments-not-an-object",
        ),
        pytest.param(
            refund({"amount": 42}),
            [{"name": "stripe.refund"}],
            False,
            "stripe.refund was called with no arguments, not an object of arguments.",
            id="no-arguments",
        ),
        pytest.param(
            refund({"amount": 42}),
            [call("orders.lookup", {"amount": 42})],
            False,
            "stripe.refund was never called. The agent called: orders.lookup.",
            id="other-tool-with-the-arguments",
        ),
    ],
)
def test_tool_called_with_arguments(
    check: Check, calls: list[dict[str, Any]], passed: bool, detail: str
) -> None:
    result = grade_one(check, calls)
    assert (result.passed, result.detail) == (passed, detail)


@pytest.mark.parametrize(
    ("expected", "value", "passed", "detail"),
    [
        ({"$regex": r"^re_\d+$"}, "re_123", True, None),
        ({"$regex": r"^re_\d+$"}, "RE_123", True, None),  # case-insensitive, as section 4
        (
            {"$regex": r"(?-i)^re_\d+$"},
            "RE_123",
            False,
            'id "RE_123"; expected a match for /(?-i)^re_\\d+$/',
        ),
        ({"$regex": "^a"}, 7, False, "id 7; expected a match for /^a/"),
        ({"$regex": "(unclosed"}, "x", False, 'id "x"; expected a match for /(unclosed/'),
        ({"$gte": 10}, 10, True, None),
        ({"$gte": 10}, 9.5, False, "id 9.5; expected at least 10"),
        ({"$lte": 10}, 11, False, "id 11; expected at most 10"),
        ({"$gte": 1, "$lte": 3}, 2, True, None),
        ({"$gte": 1, "$lte": 3}, 4, False, "id 4; expected at least 1 and at most 3"),
        ({"$gte": 1}, True, False, "id true; expected at least 1"),
        ({"$gte": 1}, "5", False, 'id "5"; expected at least 1'),
        ({"$any": True}, None, True, None),
        ({"$nope": 1}, 1, False, "id 1; expected "),
        ({"$gte": "x"}, 1, False, 'id 1; expected at least "x"'),
    ],
)
def test_matchers(expected: dict[str, Any], value: Any, passed: bool, detail: str | None) -> None:
    check = ToolCalled(id="c1", tool="t", arguments={"id": expected})
    result = grade_one(check, [call("t", {"id": value})])
    assert result.passed is passed
    if detail is not None:
        assert result.detail == f"t was called with {detail}."


def test_a_matcher_needs_the_key_to_be_there() -> None:
    check = ToolCalled(id="c1", tool="t", arguments={"id": {"$any": True}})
    assert (
        grade_one(check, [call("t", {})]).detail == "t was called with no id; expected any value."
    )


def test_a_regex_too_costly_for_the_value_does_not_match() -> None:
    check = ToolCalled(id="c1", tool="t", arguments={"note": {"$regex": "(a|b)*a(a|b){40}c"}})
    result = grade_one(check, [call("t", {"note": "a" * 1_000_000})])
    assert result.passed is False


def order(*steps: str | ToolStep, match: str = "subset") -> Check:
    return ToolOrder(id="c1", tools=steps, arguments_match=match)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("check", "calls", "passed", "detail"),
    [
        pytest.param(
            order("orders.lookup", ToolStep("stripe.refund", {"amount": 42})),
            [call("orders.lookup", {}), call("stripe.refund", {"amount": 42})],
            True,
            "The tools were called in this order: orders.lookup -> stripe.refund.",
            id="steps-with-arguments",
        ),
        pytest.param(
            order("orders.lookup", ToolStep("stripe.refund", {"amount": 42})),
            [
                call("stripe.refund", {"amount": 42}),
                call("orders.lookup", {}),
                call("stripe.refund", {"amount": 50}),
            ],
            False,
            "Expected the tools in this order: orders.lookup -> stripe.refund. stripe.refund "
            "was called with amount 50; expected 42. The agent called: stripe.refund, "
            "orders.lookup, stripe.refund.",
            id="the-call-after-differs",
        ),
        pytest.param(
            order(ToolStep("a", {"n": 1}), ToolStep("a", {"n": 2})),
            [call("a", {"n": 1}), call("a", {"n": 3}), call("a", {"n": 2})],
            True,
            "The tools were called in this order: a -> a.",
            id="calls-between-allowed",
        ),
        pytest.param(
            order(ToolStep("a", {"n": 1}), "b"),
            [call("b", {}), call("a", {"n": 2})],
            False,
            "Expected the tools in this order: a -> b. a was called with n 2; expected 1. "
            "The agent called: b, a.",
            id="first-step-differs",
        ),
        pytest.param(
            order("a", ToolStep("b", {"n": 1})),
            [call("b", {"n": 1}), call("a", {})],
            False,
            "Expected the tools in this order: a -> b. The agent called: b, a.",
            id="step-not-called-after",
        ),
        pytest.param(
            order(ToolStep("a", {"n": 1}), match="exact"),
            [call("a", {"n": 1, "m": 2})],
            False,
            "Expected the tools in this order: a. a was called with m 2, which the check "
            "does not list. The agent called: a.",
            id="exact-steps",
        ),
    ],
)
def test_tool_order_with_arguments(
    check: Check, calls: list[dict[str, Any]], passed: bool, detail: str
) -> None:
    result = grade_one(check, calls)
    assert (result.passed, result.detail) == (passed, detail)


def test_a_tool_order_entry_is_a_name_or_an_object_with_arguments() -> None:
    written = {"type": "tool_order", "tools": ["a", {"tool": "b", "arguments": {"n": 1}}]}
    check = msgspec.convert(written, Check)
    assert isinstance(check, ToolOrder)
    assert check.step_names() == ("a", "b")
    assert check.detail() == 'a → b {"n":1}'
    with pytest.raises(msgspec.ValidationError, match="tools\\[0\\]"):
        msgspec.convert({"type": "tool_order", "tools": [{"tool": "b"}]}, Check)


@pytest.mark.parametrize(
    ("arguments", "problems"),
    [
        (
            {
                "amount": 42,
                "id": {"$regex": "^a"},
                "n": {"$gte": 1, "$lte": 2},
                "x": {"$any": True},
            },
            [],
        ),
        (
            {"id": {"$regexp": "a"}},
            [("/id/$regexp", "$regexp is not a matcher; use one of $regex, $gte, $lte, $any.")],
        ),
        ({"id": {"$regex": 1}}, [("/id/$regex", "$regex takes a regular expression (a string).")]),
        ({"id": {"$gte": "1"}}, [("/id/$gte", "$gte takes a number.")]),
        ({"id": {"$lte": True}}, [("/id/$lte", "$lte takes a number.")]),
        (
            {"id": {"$any": False}},
            [("/id/$any", "$any takes true (the argument is there, with any value).")],
        ),
        (
            {"a/b": {"$any": 1}},
            [("/a~1b/$any", "$any takes true (the argument is there, with any value).")],
        ),
        (
            {"id": {"$regex": "a", "x": 1}},
            [
                (
                    "/id",
                    "A matcher ($regex, $gte, $lte, $any) stands for a whole argument value: it "
                    "cannot sit inside another value or beside other keys.",
                )
            ],
        ),
        (
            {"id": [{"v": {"$gte": 1}}]},
            [
                (
                    "/id",
                    "A matcher ($regex, $gte, $lte, $any) stands for a whole argument value: it "
                    "cannot sit inside another value or beside other keys.",
                )
            ],
        ),
        ({"price": {"currency": "$USD"}, "empty": {}}, []),
    ],
)
def test_matchers_that_cannot_be_used_are_named_where(
    arguments: dict[str, Any], problems: list[tuple[str, str]]
) -> None:
    assert list(matcher_problems(arguments)) == problems


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, False, True),
        ({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ([1, 2], [2, 1], False),
        ([1], [1, 1], False),
        ("1", 1, False),
        (None, None, True),
    ],
)
def test_json_equality(left: Any, right: Any, equal: bool) -> None:
    assert json_equal(left, right) is equal
    assert json_equal(right, left) is equal


def test_the_detail_of_a_check_with_arguments_names_them() -> None:
    assert refund({"amount": 42}).detail() == 'stripe.refund {"amount":42}'
    assert ToolCalled(tool="t").detail() == "t"


def test_a_later_call_that_comes_no_closer_is_not_the_one_named() -> None:
    made = [call("stripe.refund", {"amount": 41}), call("stripe.refund", {"currency": "usd"})]
    assert grade_one(refund({"amount": 42}), made).detail == (
        "stripe.refund was called with amount 41; expected 42 (the closest of its 2 calls)."
    )


@pytest.mark.parametrize(
    ("written", "problems"),
    [
        (ToolCalled(tool="t", arguments={"id": {"$regex": "^re_"}}), []),
        (
            ToolCalled(tool="t", arguments={"id": {"$regex": "(unclosed"}}),
            [
                (
                    "/arguments/id/$regex",
                    "The regular expression does not compile: missing ): (unclosed.",
                )
            ],
        ),
        (
            ToolOrder(tools=("a", ToolStep("b", {"n": {"$gte": "x"}}))),
            [("/tools/1/arguments/n/$gte", "$gte takes a number.")],
        ),
        (ToolOrder(tools=("a", "b")), []),
        (ToolCalled(tool="t"), []),
    ],
)
def test_arguments_that_cannot_be_used_are_refused_at_write_time(
    written: Check, problems: list[tuple[str, str]]
) -> None:
    assert written_check_problems(written) == problems
