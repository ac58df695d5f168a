"""The rubric editor's form and back: what is typed becomes the case a run grades."""

from __future__ import annotations

from agentlasso.domain.checks import (
    CHECK_TYPES,
    PRODUCT_NAMES,
    LlmJudge,
    OutputContains,
    OutputNotContains,
    ToolCalled,
    ToolOrder,
)
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.web import case_form


def posted(**fields: str) -> dict[str, str]:
    return {"input": "Where is my refund?", "evaluation_type": "SCORE", "min_confidence": "70",
            **fields}  # fmt: skip


def test_every_check_type_round_trips_through_the_form() -> None:
    content = TestCaseContent(
        input="Where is my refund?",
        checks=(
            ToolCalled(id="c1", tool="stripe.refund"),
            ToolOrder(id="c2", tools=("orders.lookup", "stripe.refund"), severity="minor"),
            OutputNotContains(id="c3", value="guarantee(d)?", regex=True),
            LlmJudge(id="c4", criterion="It says when the money arrives."),
        ),
        description="refunds",
        expected_output="3-5 business days",
        evaluation_type="BOOLEAN",
        min_confidence=80,
    )
    form = case_form.from_content(content)
    assert [check.product_name for check in form.checks] == [
        "Tool must be called", "Tools called in this order", "Forbidden in output",
        "AI judge: meets a criterion",
    ]  # fmt: skip
    assert form.checks[1].tools == "orders.lookup\nstripe.refund"
    back, errors = case_form.to_content(form)
    assert errors == {}
    assert back == content


def test_posted_fields_become_checks_in_their_order() -> None:
    form = case_form.from_form_data(posted(**{
        "checks-1-type": "output_contains", "checks-1-value": "refund", "checks-1-regex": "on",
        "checks-0-type": "tool_called", "checks-0-tool": " stripe.refund ",
        "checks-0-severity": "minor", "checks-2-type": "no_such_type",
    }))  # fmt: skip
    content, errors = case_form.to_content(form)
    assert errors == {} and content is not None
    assert content.checks == (
        ToolCalled(tool="stripe.refund", severity="minor"),
        OutputContains(value="refund", regex=True),
    )


def test_problems_are_named_by_the_field_that_shows_them() -> None:
    form = case_form.from_form_data(
        posted(min_confidence="high", **{"checks-0-type": "tool_called", "checks-0-tool": ""})
    )
    _, errors = case_form.to_content(form)
    assert errors == {"min_confidence": "Enter a whole number from 0 to 100."}
    form = case_form.from_form_data(posted(**{"checks-0-type": "tool_called"}))
    _, errors = case_form.to_content(form)
    assert list(errors) == ["checks-0-tool"]
    json_input = case_form.from_form_data(posted(input="[1, 2]", input_format="json"))
    _, errors = case_form.to_content(json_input)
    assert "Must be a JSON object" in errors["input"]


def test_checks_are_added_and_removed_without_touching_the_rest() -> None:
    form = case_form.from_form_data(
        posted(**{"checks-0-type": "tool_called", "checks-0-tool": "a"})
    )
    added = case_form.with_check_added(form, "llm_judge")
    assert [check.type for check in added.checks] == ["tool_called", "llm_judge"]
    assert case_form.with_check_added(form, "nonsense") == form
    removed = case_form.with_check_removed(added, 0)
    assert [check.type for check in removed.checks] == ["llm_judge"]
    assert len(PRODUCT_NAMES) == len(CHECK_TYPES)  # adding one of no type added no type


def test_older_criteria_convert_to_checks_of_their_own() -> None:
    older = TestCaseContent(
        input="hi",
        evaluation_criteria_json={
            "expected_tool_calls": ["orders.lookup"],
            "guardrails": ["guarantee"],
            "semantic_guardrails": ["Never promise a date."],
        },
    )
    form = case_form.from_content(older)
    assert form.uses_older_criteria
    checks, free_text = case_form.older_criteria(form)
    assert [check.product_name for check in checks] == [
        "Tool must be called",
        "Forbidden in output",
    ]
    assert free_text == ["Never promise a date."]
    # Saved as it is, it stays an older case: graded exactly as before.
    unchanged, _ = case_form.to_content(form)
    assert unchanged is not None and unchanged.checks is None
    converted, errors = case_form.to_content(case_form.with_older_criteria_converted(form))
    assert errors == {} and converted is not None
    assert [type(check).__name__ for check in converted.checks or ()] == [
        "ToolCalled", "OutputNotContains", "LlmJudge"
    ]  # fmt: skip
    assert isinstance(converted.checks[2], LlmJudge)  # type: ignore[index]
    assert converted.checks[2].criterion == "Never promise a date."  # type: ignore[index, union-attr]


def test_a_pointer_names_its_form_field() -> None:
    assert case_form.field_of("/checks/2/tool") == "checks-2-tool"
    assert case_form.field_of("/checks/2/whatever") == "checks-2-type"
    assert case_form.field_of("/checks/2") == "checks-2-type"
    assert case_form.field_of("/checks/0/tools/1/arguments/amount/$gte") == "checks-0-tools"
    assert case_form.field_of("/min_confidence") == "min_confidence"
    assert case_form.field_of("/evaluation_criteria_json/x") == "older_criteria"
    assert case_form.field_of("/") == ""
