"""promptfoo asserts as checks: each mapping, and that the checks grade as promptfoo does (its
`contains` is case-sensitive, ours is not unless a pattern says so)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentlasso.domain.checks import Check
from agentlasso.domain.grades import Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case
from agentlasso.importers.promptfoo_asserts import Mapped, literal_pattern, map_assert

_checks = msgspec.json.Decoder(tuple[Check, ...])


def checks_of(assertion: dict[str, Any], variables: dict[str, Any] | None = None) -> list[Any]:
    mapped = map_assert(assertion, variables or {})
    assert isinstance(mapped, Mapped), mapped
    return mapped.checks


def why_not(assertion: dict[str, Any]) -> str:
    mapped = map_assert(assertion, {})
    assert isinstance(mapped, str), mapped
    return mapped


def passes(checks: list[dict[str, Any]], reply: str) -> bool:
    """Whether our grading passes every check on this reply."""
    decoded = _checks.decode(
        msgspec.json.encode([{"id": f"c{i}", **c} for i, c in enumerate(checks)])
    )
    result = grade_case(
        TestCaseContent(input="q", checks=decoded), Observation(actual_output=reply)
    )
    return all(check.passed for check in result.check_results)


@pytest.mark.parametrize(
    ("assertion", "checks"),
    [
        ({"type": "icontains", "value": "Refund"},
         [{"type": "output_contains", "value": "Refund"}]),
        ({"type": "not-icontains", "value": "x"}, [{"type": "output_not_contains", "value": "x"}]),
        ({"type": "contains", "value": "3-5"}, [{"type": "output_contains", "value": "3-5"}]),
        ({"type": "contains", "value": 42}, [{"type": "output_contains", "value": "42"}]),
        ({"type": "contains", "value": "A.b"},
         [{"type": "output_contains", "value": "(?-i)A\\.b", "regex": True}]),
        ({"type": "not-contains", "value": "Guaranteed"},
         [{"type": "output_not_contains", "value": "(?-i)Guaranteed", "regex": True}]),
        ({"type": "regex", "value": "^\\d+$"},
         [{"type": "output_contains", "value": "(?-i)^\\d+$", "regex": True}]),
        ({"type": "not-regex", "value": "x+"},
         [{"type": "output_not_contains", "value": "(?-i)x+", "regex": True}]),
        ({"type": "is-json"}, [{"type": "output_valid_json"}]),
        ({"type": "is-json", "value": {"type": "object"}},
         [{"type": "output_matches_schema", "schema": {"type": "object"}}]),
        ({"type": "is-json", "value": "type: array\nminItems: 1"},
         [{"type": "output_matches_schema", "schema": {"type": "array", "minItems": 1}}]),
        ({"type": "contains-json"},
         [{"type": "output_matches_schema", "schema": {"type": "object"}}]),
        ({"type": "contains-json", "value": {"required": ["a"]}},
         [{"type": "output_matches_schema",
           "schema": {"allOf": [{"type": "object"}, {"required": ["a"]}]}}]),
        ({"type": "equals", "value": "Yes"},
         [{"type": "output_equals", "value": "Yes", "ignore_case": False, "trim": False}]),
        ({"type": "equals", "value": True},
         [{"type": "output_equals", "value": "true", "ignore_case": False, "trim": False}]),
        ({"type": "equals", "value": {"a": [1]}},
         [{"type": "output_matches_schema", "schema": {"const": {"a": [1]}}}]),
        ({"type": "is-valid-openai-tools-call"}, [{"type": "tool_args_valid"}]),
        ({"type": "llm-rubric", "value": "Is polite"},
         [{"type": "llm_judge", "criterion": "Is polite"}]),
        ({"type": "g-eval", "value": ["Is brief", "Is kind"]},
         [{"type": "llm_judge", "criterion": "Is brief"},
          {"type": "llm_judge", "criterion": "Is kind"}]),
        ({"type": "latency", "threshold": 1500.9}, [{"type": "latency_below", "ms": 1500}]),
    ],
)  # fmt: skip
def test_each_assert_maps_to_its_checks(
    assertion: dict[str, Any], checks: list[dict[str, Any]]
) -> None:
    assert checks_of(assertion) == checks


@pytest.mark.parametrize(
    ("assertion", "why"),
    [
        ({"type": "javascript", "value": "output.length < 9"}, "javascript asserts run code"),
        ({"type": "python", "value": "True"}, "python asserts run code"),
        ({"type": "webhook", "value": "http://x"}, "call a server"),
        ({"type": "similar", "value": "x"}, "no check does what similar does"),
        ({"type": "not-equals", "value": "x"}, "no check passes exactly when equals fails"),
        ({"type": "not-is-json"}, "no check passes exactly when is-json fails"),
        ({"type": "icontains", "value": "file://words.txt"}, "file:// references"),
        ({"type": "contains", "value": "x", "transform": "output.trim()"}, "its transform"),
        ({"type": "contains", "value": "{{ a | upper }}"}, "template beyond"),
        ({"type": "contains", "value": ""}, "an empty value"),
        ({"type": "contains", "value": ["a"]}, "needs a text value"),
        ({"type": "regex", "value": "(a)\\1"}, "RE2 cannot run"),
        ({"type": "regex", "value": "(?=a)"}, "RE2 cannot run"),
        ({"type": "latency"}, "needs a threshold"),
        ({"type": "llm-rubric", "value": {"a": 1}}, "needs its criteria as text"),
        ({"type": "is-json", "value": "[unclosed"}, "needs a JSON Schema"),
    ],
)
def test_what_is_not_imported_says_why(assertion: dict[str, Any], why: str) -> None:
    assert why in why_not(assertion)


def test_weight_metric_and_threshold_are_listed_as_not_kept() -> None:
    mapped = map_assert(
        {"type": "llm-rubric", "value": "x", "weight": 2, "metric": "tone", "threshold": 0.7,
         "provider": "openai:gpt-4o"},
        {},
    )  # fmt: skip
    assert isinstance(mapped, Mapped)
    assert [field for field, _ in mapped.losses] == ["weight", "metric", "threshold", "provider"]
    assert map_assert({"type": "icontains", "value": "x", "weight": 1}, {}) == Mapped(
        [{"type": "output_contains", "value": "x"}], mapped_how("icontains")
    )


def mapped_how(kind: str) -> str:
    mapped = map_assert({"type": kind, "value": "x"}, {})
    assert isinstance(mapped, Mapped)
    return mapped.how


def test_vars_fill_a_value_as_promptfoo_renders_it() -> None:
    assert checks_of({"type": "icontains", "value": "Hello {{ name }}!"}, {"name": "Ada"}) == [
        {"type": "output_contains", "value": "Hello Ada!"}
    ]
    assert "template" in str(map_assert({"type": "icontains", "value": "{{missing}}"}, {}))


@pytest.mark.parametrize(
    ("kind", "value", "reply", "promptfoo_passes"),
    [
        ("contains", "Refund", "Your refund is on its way", False),
        ("contains", "Refund", "Refund issued", True),
        ("not-contains", "Guaranteed", "guaranteed delivery", True),
        ("not-contains", "Guaranteed", "Guaranteed delivery", False),
        ("icontains", "REFUND", "your refund", True),
        ("regex", "Order \\d+", "order 12", False),
        ("regex", "Order \\d+", "Order 12", True),
        ("not-regex", "^Sorry", "sorry, no", True),
        ("equals", "Yes", "yes", False),
        ("equals", "Yes", "Yes ", False),
        ("equals", "Yes", "Yes", True),
        ("equals", {"a": 1}, '{ "a" : 1 }', True),
        ("equals", {"a": 1}, '{"a": 2}', False),
        ("is-json", None, '{"a": 1}', True),
        ("is-json", None, "not json", False),
        ("is-json", {"type": "object", "required": ["a"]}, '{"b": 1}', False),
    ],
)
def test_the_checks_grade_as_promptfoo_does(
    kind: str, value: Any, reply: str, promptfoo_passes: bool
) -> None:
    assertion = {"type": kind} if value is None else {"type": kind, "value": value}
    assert passes(checks_of(assertion), reply) is promptfoo_passes


@given(value=st.text(min_size=1, max_size=40), reply=st.text(max_size=80))
def test_a_case_sensitive_contains_finds_exactly_what_javascript_includes_finds(
    value: str, reply: str
) -> None:
    pattern = "(?-i)" + literal_pattern(value)
    check = {"type": "output_contains", "value": pattern, "regex": True}
    assert passes([check], reply + value) is True
    assert passes([check], reply) is (value in reply)
