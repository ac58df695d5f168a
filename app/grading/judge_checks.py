"""Checks the AI judge decides: `llm_judge` and the implicit `expectation`.

The verdicts come from outside (the judge runs in the workers); without a usable one a check
is not graded, with the reason, and never read as a pass or a fail.
"""

from __future__ import annotations

import math
from typing import Literal

import msgspec

from agentlasso.domain.checks import JudgeExample, LlmJudge
from agentlasso.domain.conversations import Message
from agentlasso.domain.grades import CheckResult, JudgeVerdict, Observation
from agentlasso.domain.test_cases import EvaluationType, TestCaseContent
from agentlasso.grading.context import GradingContext
from agentlasso.grading.excerpts import quoted
from agentlasso.grading.outcomes import judged, not_graded
from agentlasso.grading.plan import expected_output, plan_case

EXPECTATION_ID = "expectation"


class JudgeRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One verdict a case needs: what to ask the judge, and the key its verdict goes under."""

    check_id: str
    kind: Literal["llm_judge", "expectation"]
    # The plain-English criterion, or the expected output.
    criterion: str
    evaluation_type: EvaluationType
    # An llm_judge criterion's calibration examples, shown to the judge as data.
    examples: tuple[JudgeExample, ...] = ()
    # A conversation's checks: the messages before the reply judged (shown as the input) and
    # that reply. None for a single-turn case, whose input and reply the judge is shown.
    conversation_input: tuple[Message, ...] | None = None
    conversation_reply: str | None = None


def grade_llm_judge(check: LlmJudge, context: GradingContext) -> CheckResult:
    """Passes when the judge's verdict says the reply meets the criterion."""
    check_id = check.id or ""
    verdict = context.verdicts.get(check_id)
    problem = _unusable(verdict, "BOOLEAN")
    if verdict is None or problem is not None:
        return not_graded(check_id, check.severity, problem or _MISSING)
    ok = bool(verdict.passed)
    meets = "meets" if ok else "does not meet"
    detail = f"The AI judge decided the reply {meets} the criterion {quoted(check.criterion)}."
    return judged(
        check_id, check.severity, ok, detail, score=1.0 if ok else 0.0, reasoning=verdict.reasoning
    )


def grade_expectation(content: TestCaseContent, context: GradingContext) -> CheckResult:
    """The judge on expected_output: BOOLEAN passes or fails, SCORE must reach the floor."""
    verdict = context.verdicts.get(EXPECTATION_ID)
    problem = _unusable(verdict, content.evaluation_type)
    if verdict is None or problem is not None:
        return not_graded(EXPECTATION_ID, "critical", problem or _MISSING)
    if content.evaluation_type == "BOOLEAN":
        ok = bool(verdict.passed)
        matches = "matches" if ok else "does not match"
        detail = f"The AI judge decided the reply {matches} the expected output."
        score = 1.0 if ok else 0.0
    else:
        score = float(verdict.score or 0.0)
        ok = reaches(score, content.min_confidence)
        relation = "reaching" if ok else "below"
        detail = (
            f"The AI judge scored the reply {_percent(score)}/100, "
            f"{relation} the minimum {content.min_confidence}."
        )
    return judged(EXPECTATION_ID, "critical", ok, detail, score=score, reasoning=verdict.reasoning)


def reaches(score: float, min_confidence: int) -> bool:
    """Whether a 0 to 1 score reaches a 0 to 100 floor, immune to float noise (0.29 * 100)."""
    return round(score * 100, 6) >= min_confidence


_MISSING = "No AI judge verdict: none was supplied for this check."


def _unusable(verdict: JudgeVerdict | None, evaluation_type: EvaluationType) -> str | None:
    """Why a verdict cannot be used for this kind of check, or None when it can."""
    if verdict is None:
        return _MISSING
    if verdict.not_graded_reason is not None:
        return f"No AI judge verdict: {verdict.not_graded_reason.rstrip('.')}."
    if evaluation_type == "BOOLEAN" and not isinstance(verdict.passed, bool):
        return "No AI judge verdict: the judge's answer has no pass or fail decision."
    if evaluation_type == "SCORE" and not _valid_score(verdict.score):
        return "No AI judge verdict: the judge's answer has no score between 0 and 1."
    return None


def _valid_score(score: object) -> bool:
    """A finite number from 0 to 1."""
    return (
        isinstance(score, int | float)
        and not isinstance(score, bool)
        and math.isfinite(score)
        and 0.0 <= score <= 1.0
    )


def _percent(score: float) -> str:
    """A 0 to 1 score on the judge's 0 to 100 scale: `85`, `69.5`."""
    return f"{round(score * 100, 1):g}"


def judge_requests(
    content: TestCaseContent, observation: Observation | None = None
) -> tuple[JudgeRequest, ...]:
    """The verdicts grading this case needs; none when the observation makes them moot."""
    if observation is not None and (
        observation.agent_error is not None or observation.actual_output is None
    ):
        # Those checks fail without a judge: the reply is missing or the agent call failed.
        return ()
    requests = [
        JudgeRequest(
            check_id=check.id or "",
            kind="llm_judge",
            criterion=check.criterion,
            evaluation_type="BOOLEAN",
            examples=check.examples or (),
        )
        for check in plan_case(content).checks
        if isinstance(check, LlmJudge)
    ]
    expected = expected_output(content)
    if expected is not None:
        requests.append(
            JudgeRequest(
                check_id=EXPECTATION_ID,
                kind="expectation",
                criterion=expected,
                evaluation_type=content.evaluation_type,
            )
        )
    return tuple(requests)
