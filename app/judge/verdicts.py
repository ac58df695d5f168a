"""The judge's answer: the schema it must follow, and reading it into a verdict (pure)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from agentlasso.domain.grades import JudgeVerdict
from agentlasso.domain.json_nesting import TOO_DEEP_WORDS, too_deep

EvaluationType = Literal["BOOLEAN", "SCORE"]

# Part of every cache key: a change to the schema or to how answers are read bumps it.
VERDICT_SCHEMA_VERSION = "1"
# The forced tool's name, for models without structured outputs.
VERDICT_TOOL_NAME = "record_verdict"

REFUSED = "the judge refused to answer"
CUT_OFF = "the judge's answer was cut off (max_tokens)"
NO_TOOL_CALL = "the judge did not call the verdict tool"


class BooleanAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A BOOLEAN answer: reasoning first, then the decision."""

    reasoning: str
    passed: bool


class ScoreAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A SCORE answer: reasoning first, then 0 to 100 (the API does not enforce the range)."""

    reasoning: str
    score: Annotated[int, msgspec.Meta(ge=0, le=100)]


class ModelOutput(msgspec.Struct, frozen=True, kw_only=True):
    """What one model response holds that matters to a verdict, taken from its blocks by type."""

    stop_reason: str | None
    # The text blocks joined (the structured-output path).
    text: str = ""
    # The verdict tool's input (the forced-tool path); None when the tool was not called.
    tool_input: dict[str, Any] | None = None


def verdict_schema(evaluation_type: EvaluationType) -> dict[str, Any]:
    """The JSON schema of an answer; `reasoning` first, so the model reasons before it decides."""
    verdict: dict[str, Any]
    if evaluation_type == "BOOLEAN":
        name, verdict = "passed", {"type": "boolean", "description": "true only if it meets it"}
    else:
        name, verdict = "score", {"type": "integer", "description": "0 to 100 on the scale given"}
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "description": "why, in a few sentences"},
            name: verdict,
        },
        "required": ["reasoning", name],
        "additionalProperties": False,
    }


def read_verdict(
    output: ModelOutput, evaluation_type: EvaluationType, *, model: str, forced_tool: bool
) -> JudgeVerdict:
    """The verdict in a response, or `unavailable` saying why it cannot be used."""
    problem = _stop_problem(output.stop_reason, forced_tool=forced_tool)
    if problem is not None:
        return JudgeVerdict.unavailable(problem)
    answer_type: type[BooleanAnswer | ScoreAnswer] = (
        BooleanAnswer if evaluation_type == "BOOLEAN" else ScoreAnswer
    )
    try:
        if forced_tool:
            if output.tool_input is None:
                return JudgeVerdict.unavailable(NO_TOOL_CALL)
            answer = msgspec.convert(output.tool_input, answer_type, strict=True)
        elif too_deep(output.text) is not None:
            return JudgeVerdict.unavailable(f"the judge's answer is JSON {TOO_DEEP_WORDS}")
        else:
            answer = msgspec.json.decode(output.text, type=answer_type)
    except msgspec.DecodeError as exc:  # ValidationError included
        return JudgeVerdict.unavailable(f"the judge's answer did not match the schema: {exc}")
    return _verdict(answer, model)


def _stop_problem(stop_reason: str | None, *, forced_tool: bool) -> str | None:
    """Why the model's stop makes the answer unusable, or None when it finished normally."""
    # Only a normal finish counts: a refusal or a cut-off may still carry parseable JSON.
    expected = "tool_use" if forced_tool else "end_turn"
    if stop_reason == expected:
        return None
    if stop_reason == "refusal":
        return REFUSED
    if stop_reason == "max_tokens":
        return CUT_OFF
    return f"the judge stopped without an answer (stop_reason: {stop_reason})"


def _verdict(answer: BooleanAnswer | ScoreAnswer, model: str) -> JudgeVerdict:
    """The engine's verdict: a decision, or the 0 to 100 score as 0 to 1."""
    if isinstance(answer, BooleanAnswer):
        return JudgeVerdict.decided(answer.passed, reasoning=answer.reasoning, model=model)
    return JudgeVerdict.scored(answer.score / 100, reasoning=answer.reasoning, model=model)
