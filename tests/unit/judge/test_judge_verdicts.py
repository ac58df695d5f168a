"""Reading the judge's answer into a verdict, and what the judging costs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentlasso.domain.grades import JudgeVerdict
from agentlasso.domain.judging import Usage
from agentlasso.judge.pricing import cost_usd
from agentlasso.judge.verdicts import (
    CUT_OFF,
    NO_TOOL_CALL,
    REFUSED,
    EvaluationType,
    ModelOutput,
    read_verdict,
    verdict_schema,
)

MODEL = "claude-sonnet-5-5"
SCHEMA_PROBLEM = "the judge's answer did not match the schema: "


def read_text(
    answer: Any, evaluation_type: EvaluationType = "BOOLEAN", stop_reason: str = "end_turn"
) -> JudgeVerdict:
    """The verdict in a structured-output answer (a str is sent as is, anything else as JSON)."""
    text = answer if isinstance(answer, str) else json.dumps(answer)
    output = ModelOutput(stop_reason=stop_reason, text=text)
    return read_verdict(output, evaluation_type, model=MODEL, forced_tool=False)


def read_tool(
    tool_input: dict[str, Any] | None,
    evaluation_type: EvaluationType = "BOOLEAN",
    stop_reason: str = "tool_use",
) -> JudgeVerdict:
    """The verdict in a forced tool call."""
    output = ModelOutput(stop_reason=stop_reason, tool_input=tool_input)
    return read_verdict(output, evaluation_type, model=MODEL, forced_tool=True)


def assert_no_verdict(verdict: JudgeVerdict, reason: str) -> None:
    """Not graded, with this reason: neither a pass nor a fail nor a score."""
    assert verdict.passed is None
    assert verdict.score is None
    assert verdict.not_graded_reason is not None
    assert verdict.not_graded_reason.startswith(reason), verdict.not_graded_reason


# --- valid answers ----------------------------------------------------------------------------


@pytest.mark.parametrize("passed", [True, False])
def test_a_boolean_answer_is_a_decision(passed: bool) -> None:
    verdict = read_text({"reasoning": "It names the delay.", "passed": passed})
    assert verdict == JudgeVerdict.decided(passed, reasoning="It names the delay.", model=MODEL)


@pytest.mark.parametrize(("score", "expected"), [(0, 0.0), (69, 0.69), (70, 0.7), (100, 1.0)])
def test_a_score_answer_is_returned_as_0_to_1(score: int, expected: float) -> None:
    verdict = read_text({"reasoning": "Close.", "score": score}, "SCORE")
    assert verdict == JudgeVerdict.scored(expected, reasoning="Close.", model=MODEL)


def test_the_forced_tool_answer_is_read_from_the_tool_input() -> None:
    assert read_tool({"reasoning": "Yes.", "passed": True}).passed is True
    assert read_tool({"reasoning": "Most.", "score": 90}, "SCORE").score == 0.9


# --- invalid answers: never a pass, never a fail ----------------------------------------------

INVALID_BOOLEAN = [
    pytest.param({"reasoning": "Fine."}, "Object missing required field `passed`", id="missing"),
    pytest.param({"passed": True}, "Object missing required field `reasoning`", id="no-reason"),
    pytest.param({"reasoning": "Fine.", "passed": "true"}, "Expected `bool`, got `str`", id="str"),
    pytest.param({"reasoning": "Fine.", "passed": 1}, "Expected `bool`, got `int`", id="int"),
    pytest.param({"reasoning": "Fine.", "passed": None}, "Expected `bool`, got `null`", id="null"),
    pytest.param({"reasoning": 3, "passed": True}, "Expected `str`, got `int`", id="reason-type"),
    pytest.param(
        {"reasoning": "Fine.", "passed": True, "confidence": 0.9},
        "Object contains unknown field `confidence`",
        id="extra",
    ),
    pytest.param([True], "Expected `object`, got `array`", id="array"),
]
INVALID_SCORE = [
    pytest.param({"reasoning": "Great.", "score": 140}, "Expected `int` <= 100", id="140"),
    pytest.param({"reasoning": "Awful.", "score": -1}, "Expected `int` >= 0", id="-1"),
    pytest.param({"reasoning": "Good.", "score": 85.5}, "Expected `int`, got `float`", id="float"),
    pytest.param({"reasoning": "Good.", "score": "90"}, "Expected `int`, got `str`", id="str"),
    pytest.param({"reasoning": "Good.", "score": True}, "Expected `int`, got `bool`", id="bool"),
    pytest.param({"reasoning": "Good."}, "Object missing required field `score`", id="missing"),
    pytest.param(
        {"reasoning": "Good.", "score": 90, "passed": True},
        "Object contains unknown field `passed`",
        id="extra",
    ),
]


@pytest.mark.parametrize(("answer", "error"), INVALID_BOOLEAN)
def test_an_invalid_boolean_answer_is_no_verdict(answer: Any, error: str) -> None:
    assert_no_verdict(read_text(answer), SCHEMA_PROBLEM + error)
    if isinstance(answer, dict):
        assert_no_verdict(read_tool(answer), SCHEMA_PROBLEM + error)


@pytest.mark.parametrize(("answer", "error"), INVALID_SCORE)
def test_an_invalid_score_answer_is_no_verdict(answer: Any, error: str) -> None:
    assert_no_verdict(read_text(answer, "SCORE"), SCHEMA_PROBLEM + error)
    assert_no_verdict(read_tool(answer, "SCORE"), SCHEMA_PROBLEM + error)


@pytest.mark.parametrize("text", ["", "yes", "PASS", '{"reasoning": "ok", "passed": tru', "null"])
def test_text_that_is_not_the_json_object_is_no_verdict(text: str) -> None:
    assert_no_verdict(read_text(text), SCHEMA_PROBLEM)


# --- how the model stopped --------------------------------------------------------------------

PASSING = {"reasoning": "Fine.", "passed": True}


def test_a_refusal_is_no_verdict_even_with_a_passing_body() -> None:
    assert_no_verdict(read_text(PASSING, stop_reason="refusal"), REFUSED)
    assert_no_verdict(read_tool(PASSING, stop_reason="refusal"), REFUSED)


def test_a_cut_off_answer_is_no_verdict() -> None:
    assert_no_verdict(read_text('{"reasoning": "The reply expl', stop_reason="max_tokens"), CUT_OFF)
    assert_no_verdict(read_text(PASSING, stop_reason="max_tokens"), CUT_OFF)


@pytest.mark.parametrize("stop_reason", ["stop_sequence", "pause_turn", "tool_use", None])
def test_any_other_stop_is_no_verdict(stop_reason: str | None) -> None:
    verdict = read_verdict(
        ModelOutput(stop_reason=stop_reason, text=json.dumps(PASSING)),
        "BOOLEAN",
        model=MODEL,
        forced_tool=False,
    )
    assert_no_verdict(verdict, f"the judge stopped without an answer (stop_reason: {stop_reason})")


def test_the_forced_tool_path_needs_the_tool_call() -> None:
    assert_no_verdict(read_tool(None), NO_TOOL_CALL)
    # A plain end_turn with text is not the tool call the request forced.
    assert_no_verdict(read_tool(PASSING, stop_reason="end_turn"), "the judge stopped")


# --- the schema -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evaluation_type", "field", "json_type"),
    [("BOOLEAN", "passed", "boolean"), ("SCORE", "score", "integer")],
)
def test_the_schema_is_closed_and_asks_for_reasoning_first(
    evaluation_type: EvaluationType, field: str, json_type: str
) -> None:
    schema = verdict_schema(evaluation_type)
    assert schema["type"] == "object"
    assert list(schema["properties"]) == ["reasoning", field]
    assert schema["properties"]["reasoning"]["type"] == "string"
    assert schema["properties"][field]["type"] == json_type
    assert schema["required"] == ["reasoning", field]
    assert schema["additionalProperties"] is False


# --- cost -------------------------------------------------------------------------------------

PRICES = {
    "claude-haiku-5-5": (0.10, 0.50),
    "claude-sonnet-5-5": (2.0, 10.0),
    "claude-opus-5-5": (4.0, 20.0),
    "claude-haiku-4-5": (1.0, 5.0),
}


@pytest.mark.parametrize(
    ("usage", "model", "expected"),
    [
        (Usage(input_tokens=1_000_000), "claude-sonnet-5-5", 2.0),
        (Usage(output_tokens=1_000_000), "claude-sonnet-5-5", 10.0),
        (Usage(input_tokens=2_000, output_tokens=300), "claude-opus-5-5", 0.008 + 0.006),
        (Usage(cache_read_input_tokens=1_000_000), "claude-sonnet-5-5", 0.2),
        (Usage(cache_creation_input_tokens=1_000_000), "claude-sonnet-5-5", 2.5),
        (Usage(420, 60, 1_000, 2_000), "claude-haiku-4-5", (420 + 1_250 + 200 + 300) / 1e6),
        (Usage(input_tokens=1_000_000), "claude-haiku-5-5", 0.1),
        (Usage(), "claude-opus-5-5", 0.0),
    ],
)
def test_cost_from_the_price_table(usage: Usage, model: str, expected: float) -> None:
    assert cost_usd(usage, model, PRICES) == pytest.approx(expected)


def test_a_dated_snapshot_costs_what_its_alias_costs() -> None:
    usage = Usage(input_tokens=1_000_000)
    assert cost_usd(usage, "claude-haiku-4-5-20251001", PRICES) == pytest.approx(1.0)


@pytest.mark.parametrize("model", ["claude-unknown-9", "claude-haiku-4", "claude-haiku-4-5-x"])
def test_a_model_without_a_price_is_refused(model: str) -> None:
    with pytest.raises(KeyError, match="no price for the judge model"):
        cost_usd(Usage(input_tokens=1), model, PRICES)


def test_usage_adds_up() -> None:
    total = Usage(1, 2, 3, 4).plus(Usage(10, 20, 30, 40))
    assert total == Usage(11, 22, 33, 44)


@pytest.mark.parametrize("depth", [65, 1_000, 100_000])
def test_an_answer_nested_too_deeply_is_no_verdict(depth: int) -> None:
    """An agent's reply may steer the judge into answering with deeply nested JSON: decoding
    it would raise RecursionError, so it is no verdict, said so."""
    deep = "[" * depth + "]" * depth
    verdict = read_text(f'{{"reasoning": "x", "passed": true, "extra": {deep}}}')
    assert_no_verdict(verdict, "the judge's answer is JSON nested more than 64 levels deep")
