"""output_valid_json: the reply, whitespace trimmed, parses as strict JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentlasso.domain.checks import OutputValidJson
from agentlasso.domain.grades import Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case
from agentlasso.grading.json_checks import json_error


def detail_for(reply: str | None) -> str:
    content = TestCaseContent(input="q", checks=(OutputValidJson(id="c5", severity="minor"),))
    result = grade_case(content, Observation(actual_output=reply, tool_calls=()))
    return result.check_results[0].detail


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        pytest.param('{"refund": 42}', "The reply is valid JSON.", id="object"),
        pytest.param(
            '  \n {"refund": 42}\n\t ', "The reply is valid JSON.", id="surrounding-space"
        ),
        pytest.param("\u00a0[1, 2]\u2003", "The reply is valid JSON.", id="unicode-whitespace"),
        pytest.param("42", "The reply is valid JSON.", id="number"),
        pytest.param('"text"', "The reply is valid JSON.", id="string"),
        pytest.param("null", "The reply is valid JSON.", id="null"),
        pytest.param('"\\ud800"', "The reply is valid JSON.", id="escaped-lone-surrogate"),
        pytest.param("1e999", "The reply is valid JSON.", id="huge-exponent"),
        pytest.param(
            "",
            "The reply is not valid JSON: Expecting value at line 1 column 1.",
            id="empty-reply",
        ),
        pytest.param(
            "Sure! Here is the JSON.",
            "The reply is not valid JSON: Expecting value at line 1 column 1.",
            id="prose",
        ),
        pytest.param(
            '{"refund": 42,}',
            "The reply is not valid JSON: Expecting property name enclosed in double quotes at "
            "line 1 column 15.",
            id="trailing-comma",
        ),
        pytest.param(
            '\n\n   {"a": 1,\n  "b": }',
            "The reply is not valid JSON: Expecting value at line 4 column 8.",
            id="position-counts-trimmed-lines",
        ),
        pytest.param(
            '   {"a" 1}',
            "The reply is not valid JSON: Expecting ':' delimiter at line 1 column 9.",
            id="position-counts-trimmed-columns",
        ),
        pytest.param(
            "   x",
            "The reply is not valid JSON: Expecting value at line 1 column 4.",
            id="fast-path-position",
        ),
        pytest.param(
            "[1] [2]",
            "The reply is not valid JSON: Extra data at line 1 column 5.",
            id="two-values",
        ),
        pytest.param("NaN", "The reply is not valid JSON: NaN is not a JSON value.", id="nan"),
        pytest.param(
            "[-Infinity]",
            "The reply is not valid JSON: -Infinity is not a JSON value.",
            id="infinity",
        ),
        pytest.param(
            '```json\n{"a": 1}\n```',
            "The reply is not valid JSON: Expecting value at line 1 column 1.",
            id="markdown-fence",
        ),
        pytest.param(
            "[" * 100_000 + "]" * 100_000,
            "The reply is not valid JSON: it is nested too deeply to parse.",
            id="nested-too-deeply",
        ),
        pytest.param(
            None,
            "The reply was not reported, so this check cannot be verified.",
            id="not-reported",
        ),
    ],
)
def test_valid_json(reply: str | None, detail: str) -> None:
    assert detail_for(reply) == detail


def python_says(text: str) -> bool:
    """The reference: Python's json on the trimmed text, refusing NaN and Infinity."""

    def refuse(name: str) -> object:
        raise ValueError(name)

    try:
        json.loads(text.strip(), parse_constant=refuse)
    except (ValueError, RecursionError):
        return False
    return True


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=10,
)


@given(st.text() | json_values.map(json.dumps) | st.sampled_from(["NaN", "[Infinity", "-", "01"]))
def test_agrees_with_python_json(text: str) -> None:
    assert (json_error(text) is None) is python_says(text)


@given(json_values, st.sampled_from(["", " ", "\n", "\t \r\n"]))
def test_encoded_values_with_whitespace_are_valid(value: object, space: str) -> None:
    assert json_error(space + json.dumps(value) + space) is None
