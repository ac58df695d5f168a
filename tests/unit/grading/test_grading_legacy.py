"""Older cases: evaluation_criteria_json read as checks and free-text items."""

from __future__ import annotations

from typing import Any

import pytest

from agentlasso.domain.checks import Check, OutputContains, OutputNotContains, ToolCalled
from agentlasso.domain.grades import Observation, ToolCall, UngradedItem
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case, plan_case
from agentlasso.grading.legacy import criteria_checks

FREE_TEXT_REASON = (
    "Free-text rubric items are not graded; turn it into an llm_judge check to grade it."
)


def free_text(source: str, text: str) -> UngradedItem:
    return UngradedItem(
        kind="free_text_rubric_item",
        source=f"evaluation_criteria_json.{source}",
        text=text,
        reason=FREE_TEXT_REASON,
    )


def unreadable(source: str, text: str, reason: str) -> UngradedItem:
    return UngradedItem(
        kind="unreadable_criterion",
        source=f"evaluation_criteria_json{source}",
        text=text,
        reason=reason,
    )


class Opaque:
    """Not a JSON value (criteria decoded from JSON never hold one; this must not raise)."""

    def __repr__(self) -> str:
        return "Opaque()"


TOOL_REASON = 'expected a tool name or an object with "name"'
GUARDRAIL_REASON = "expected a non-empty text the reply must not contain"


@pytest.mark.parametrize(
    ("criteria", "checks", "items"),
    [
        pytest.param(None, (), (), id="none"),
        pytest.param({}, (), (), id="empty"),
        pytest.param(
            {"expected_tool_calls": ["orders.lookup", {"name": "stripe.refund", "arguments": {}}]},
            (ToolCalled(id="c1", tool="orders.lookup"), ToolCalled(id="c2", tool="stripe.refund")),
            (),
            id="tool-names-and-objects",
        ),
        pytest.param(
            {"guardrails": ["guarantee", "card number"]},
            (
                OutputNotContains(id="c1", value="guarantee"),
                OutputNotContains(id="c2", value="card number"),
            ),
            (),
            id="guardrails",
        ),
        pytest.param(
            {
                "guardrails": ["guarantee"],
                "expected_tool_calls": ["stripe.refund"],
                "semantic_guardrails": ["Never promises a date"],
                "negative_constraints": ["Does not blame the customer", "  "],
            },
            (
                ToolCalled(id="c1", tool="stripe.refund"),
                OutputNotContains(id="c2", value="guarantee"),
            ),
            (
                free_text("semantic_guardrails[0]", "Never promises a date"),
                free_text("negative_constraints[0]", "Does not blame the customer"),
            ),
            id="all-keys-tools-first-blank-sentences-skipped",
        ),
        pytest.param(
            {"expected_tool_calls": "stripe.refund", "semantic_guardrails": "Is polite"},
            (ToolCalled(id="c1", tool="stripe.refund"),),
            (free_text("semantic_guardrails[0]", "Is polite"),),
            id="a-lone-string-is-a-list-of-one",
        ),
        pytest.param(
            {"semantic_guardrails": [{"rule": "Is polite"}]},
            (),
            (free_text("semantic_guardrails[0]", '{"rule":"Is polite"}'),),
            id="free-text-object-shown-as-json",
        ),
        pytest.param(
            {
                "expected_tool_calls": [7, {"tool": "x"}, "", None, "ok"],
                "guardrails": ["", "  ", 3, "real"],
            },
            (ToolCalled(id="c1", tool="ok"), OutputNotContains(id="c2", value="real")),
            (
                unreadable(".expected_tool_calls[0]", "7", TOOL_REASON),
                unreadable(".expected_tool_calls[1]", '{"tool":"x"}', TOOL_REASON),
                unreadable(".expected_tool_calls[2]", "", TOOL_REASON),
                unreadable(".expected_tool_calls[3]", "null", TOOL_REASON),
                unreadable(".guardrails[0]", "", GUARDRAIL_REASON),
                unreadable(".guardrails[1]", "  ", GUARDRAIL_REASON),
                unreadable(".guardrails[2]", "3", GUARDRAIL_REASON),
            ),
            id="malformed-entries",
        ),
        pytest.param(
            {"expected_tool_calls": {"name": "x"}, "guardrails": 5, "negative_constraints": None},
            (),
            (
                unreadable(".expected_tool_calls", '{"name":"x"}', "expected a list"),
                unreadable(".guardrails", "5", "expected a list"),
            ),
            id="wrong-types",
        ),
        pytest.param(
            ["guarantee"],
            (),
            (unreadable("", '["guarantee"]', "expected an object of criteria"),),
            id="not-an-object",
        ),
        pytest.param(
            {"rubric": "Be nice", "version": None, "tags": [], "notes": ""},
            (),
            (unreadable(".rubric", "Be nice", "not a criterion AgentLasso reads"),),
            id="unknown-keys-listed-when-they-hold-something",
        ),
        pytest.param(
            {"semantic_guardrails": [Opaque()]},
            (),
            (free_text("semantic_guardrails[0]", "Opaque()"),),
            id="not-json-encodable",
        ),
    ],
)
def test_criteria_become_checks_and_items(
    criteria: Any, checks: tuple[Check, ...], items: tuple[UngradedItem, ...]
) -> None:
    assert criteria_checks(criteria) == (checks, items)


def test_criteria_text_is_shortened() -> None:
    _, items = criteria_checks({"guardrails": [["x" * 500]]})
    assert items[0].text == '["' + "x" * 198 + "..."


def test_a_case_without_a_checks_list_is_graded_from_its_criteria() -> None:
    content = TestCaseContent(
        input="q",
        evaluation_criteria_json={
            "expected_tool_calls": ["stripe.refund"],
            "guardrails": ["guarantee"],
            "semantic_guardrails": ["States the refund amount"],
        },
    )
    observation = Observation(actual_output="Refund sent.", tool_calls=(ToolCall("stripe.refund"),))
    result = grade_case(content, observation)
    assert [(r.id, r.type, r.severity, r.status) for r in result.check_results] == [
        ("c1", "tool_called", "critical", "passed"),
        ("c2", "output_not_contains", "critical", "passed"),
    ]
    assert (result.pass_fail, result.graded, result.partially_graded) == (True, True, True)
    assert result.ungraded_items == (
        free_text("semantic_guardrails[0]", "States the refund amount"),
    )
    assert result.judge_reasoning == "2/2 checks passed. Not graded: 1 free-text rubric item."


def test_guardrails_are_plain_text_never_regex() -> None:
    content = TestCaseContent(input="q", evaluation_criteria_json={"guardrails": ["$42 (approx."]})
    result = grade_case(content, Observation(actual_output="about $42 (approx.)", tool_calls=()))
    assert result.check_results[0].passed is False


def test_an_empty_checks_list_is_authoritative() -> None:
    """Decision: `checks: []` is a list; the old criteria are not read and nothing is graded."""
    content = TestCaseContent(
        input="q", checks=(), evaluation_criteria_json={"guardrails": ["guarantee"]}
    )
    assert plan_case(content).checks == ()
    result = grade_case(content, Observation(actual_output="I guarantee it", tool_calls=()))
    assert (result.graded, result.pass_fail, result.score, result.check_results) == (
        False,
        False,
        None,
        (),
    )
    assert result.judge_reasoning == (
        "No checks, so the case is not graded "
        "(evaluation_criteria_json is not read: the case has a checks list)."
    )


def test_a_checks_list_wins_over_criteria() -> None:
    content = TestCaseContent(
        input="q",
        checks=(OutputContains(id="c1", value="refund"),),
        evaluation_criteria_json={"guardrails": ["refund"]},
    )
    result = grade_case(content, Observation(actual_output="refund", tool_calls=()))
    assert [r.type for r in result.check_results] == ["output_contains"]
    assert result.pass_fail is True
