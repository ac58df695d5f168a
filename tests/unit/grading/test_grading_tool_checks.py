"""tool_called, tool_not_called and tool_order: exact names (arguments are in
test_grading_tool_arguments)."""

from __future__ import annotations

import pytest

from agentlasso.domain.checks import Check, ToolCalled, ToolNotCalled, ToolOrder
from agentlasso.domain.grades import CheckResult, Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case, observation_from_wire

NOT_REPORTED = object()


def grade_one(check: Check, calls: object) -> CheckResult:
    """The result of one check against tool calls as posted (NOT_REPORTED: left out)."""
    observation = observation_from_wire(
        "reply",
        None if calls is NOT_REPORTED else calls,
        tool_calls_reported=calls is not NOT_REPORTED,
    )
    return grade_case(TestCaseContent(input="q", checks=(check,)), observation).check_results[0]


def named(*names: str) -> list[dict[str, object]]:
    return [{"name": name, "arguments": {}} for name in names]


@pytest.mark.parametrize(
    ("check", "calls", "passed", "detail"),
    [
        pytest.param(
            ToolCalled(id="c1", tool="stripe.refund"),
            named("orders.lookup", "stripe.refund"),
            True,
            "stripe.refund was called.",
            id="called",
        ),
        pytest.param(
            ToolCalled(id="c1", tool="stripe.refund"),
            named("orders.lookup"),
            False,
            "stripe.refund was never called. The agent called: orders.lookup.",
            id="never-called",
        ),
        pytest.param(
            ToolCalled(id="c1", tool="stripe.refund"),
            [],
            False,
            "stripe.refund was never called. The agent called no tools.",
            id="empty-list-means-no-calls",
        ),
        pytest.param(
            ToolCalled(id="c1", tool="stripe.refund"),
            named("Stripe.Refund", "stripe.refund "),
            False,
            "stripe.refund was never called. The agent called: Stripe.Refund, stripe.refund .",
            id="names-differing-in-case-or-space-are-not-equal",
        ),
        pytest.param(
            ToolCalled(id="c1", tool="stripe.refund"),
            [{"name": "stripe.refund", "arguments": "not even json"}],
            True,
            "stripe.refund was called.",
            id="arguments-never-compared",
        ),
        pytest.param(
            ToolCalled(id="c1", tool="stripe.refund"),
            NOT_REPORTED,
            False,
            "The tool calls were not reported, so this check cannot be verified.",
            id="called-not-reported",
        ),
        pytest.param(
            ToolCalled(id="c1", tool="stripe.refund"),
            [{"name": "orders.lookup"}, {"oops": 1}],
            False,
            "stripe.refund was never called. The agent called: orders.lookup. "
            "Could not read every reported tool call: entry 2 has no tool name.",
            id="called-with-unreadable-entry",
        ),
        pytest.param(
            ToolNotCalled(id="c1", tool="email.send"),
            named("orders.lookup"),
            True,
            "email.send was not called.",
            id="not-called",
        ),
        pytest.param(
            ToolNotCalled(id="c1", tool="email.send"),
            [],
            True,
            "email.send was not called.",
            id="not-called-empty-list",
        ),
        pytest.param(
            ToolNotCalled(id="c1", tool="email.send"),
            named("email.send", "orders.lookup", "email.send"),
            False,
            "email.send must not be called, but was called 2 times. "
            "The agent called: email.send, orders.lookup, email.send.",
            id="forbidden-tool-called-twice",
        ),
        pytest.param(
            ToolNotCalled(id="c1", tool="email.send"),
            named("email.send"),
            False,
            "email.send must not be called, but was called 1 time. The agent called: email.send.",
            id="forbidden-tool-called-once",
        ),
        pytest.param(
            ToolNotCalled(id="c1", tool="email.send"),
            named("Email.Send"),
            True,
            "email.send was not called.",
            id="not-called-exact-case",
        ),
        pytest.param(
            ToolNotCalled(id="c1", tool="email.send"),
            NOT_REPORTED,
            False,
            "The tool calls were not reported, so this check cannot be verified.",
            id="not-called-not-reported-fails",
        ),
        pytest.param(
            ToolNotCalled(id="c1", tool="email.send"),
            [{"name": "orders.lookup"}, 7],
            False,
            "Cannot confirm that email.send was not called. "
            "Could not read every reported tool call: entry 2 is a number, not an object.",
            id="unreadable-entry-could-be-the-forbidden-tool",
        ),
        pytest.param(
            ToolNotCalled(id="c1", tool="email.send"),
            {"name": "email.send"},
            False,
            "Cannot confirm that email.send was not called. "
            "Could not read every reported tool call: the tool calls were an object, not a list.",
            id="tool-calls-not-a-list",
        ),
    ],
)
def test_tool_called_and_not_called(check: Check, calls: object, passed: bool, detail: str) -> None:
    result = grade_one(check, calls)
    assert (result.passed, result.status, result.detail) == (
        passed,
        "passed" if passed else "failed",
        detail,
    )


@pytest.mark.parametrize(
    ("tools", "calls", "passed"),
    [
        pytest.param(("a", "b"), ("a", "b"), True, id="exact"),
        pytest.param(("a", "b"), ("a", "x", "y", "b"), True, id="others-between"),
        pytest.param(("a", "b"), ("b", "a"), False, id="reversed"),
        pytest.param(("a", "b"), ("b", "a", "b"), True, id="a-later-b-counts"),
        pytest.param(("a", "b"), ("a",), False, id="missing-second"),
        pytest.param(("a", "b"), (), False, id="no-calls"),
        pytest.param(("a", "a"), ("a",), False, id="repeat-must-be-called-twice"),
        pytest.param(("a", "a"), ("a", "b", "a"), True, id="repeat-interleaved"),
        pytest.param(("a", "b", "a"), ("a", "a", "b"), False, id="repeat-after-needs-a-later-call"),
        pytest.param(("a", "b", "a"), ("a", "b", "b", "a", "c"), True, id="repeat-after"),
        pytest.param(("a",), ("x", "A", "a"), True, id="single"),
        pytest.param(("a",), ("A",), False, id="exact-case"),
        pytest.param(("a", "b", "c"), ("a", "c", "b", "c"), True, id="greedy-finds-subsequence"),
        pytest.param((), ("a",), True, id="no-tools-listed-is-vacuous"),
    ],
)
def test_tool_order_is_a_subsequence(
    tools: tuple[str, ...], calls: tuple[str, ...], passed: bool
) -> None:
    result = grade_one(ToolOrder(id="c1", tools=tools), named(*calls))
    assert result.passed is passed


def test_tool_order_details() -> None:
    check = ToolOrder(id="c2", tools=("orders.lookup", "stripe.refund"))
    failed = grade_one(check, named("stripe.refund", "orders.lookup"))
    assert failed.detail == (
        "Expected the tools in this order: orders.lookup -> stripe.refund. "
        "The agent called: stripe.refund, orders.lookup."
    )
    passed = grade_one(check, named("orders.lookup", "policy.get", "stripe.refund"))
    assert passed.detail == "The tools were called in this order: orders.lookup -> stripe.refund."
    missing = grade_one(check, NOT_REPORTED)
    assert missing.detail == "The tool calls were not reported, so this check cannot be verified."


def test_long_tool_lists_are_truncated() -> None:
    calls = [f"tool.{index}" for index in range(50)]
    result = grade_one(ToolCalled(id="c1", tool="stripe.refund"), named(*calls))
    assert result.detail.endswith("tool.18, tool.19 and 30 more.")
    order = grade_one(ToolOrder(id="c1", tools=(*calls, "z")), named(*calls))
    assert "tool.19 and 31 more. The agent called:" in order.detail


def test_long_and_multiline_names_are_shortened() -> None:
    long_name = "x" * 300
    result = grade_one(ToolCalled(id="c1", tool=long_name), named("bad\nname", long_name[:-1]))
    assert result.detail == (
        f"{'x' * 80}... was never called. The agent called: bad name, {'x' * 80}...."
    )


def test_many_unreadable_entries_are_summarised() -> None:
    result = grade_one(ToolCalled(id="c1", tool="a"), [1, 2, 3, 4, 5])
    assert result.detail == (
        "a was never called. The agent called no tools. Could not read every reported tool "
        "call: entry 1 is a number, not an object; entry 2 is a number, not an object; "
        "entry 3 is a number, not an object; ...."
    )


def test_tool_checks_ignore_the_reply_being_missing() -> None:
    observation = Observation(actual_output=None, tool_calls=())
    content = TestCaseContent(input="q", checks=(ToolNotCalled(id="c1", tool="a"),))
    assert grade_case(content, observation).check_results[0].passed is True
