"""llm_judge and the implicit expectation: verdicts come from outside, or it is not graded."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from agentlasso.domain.checks import LlmJudge, OutputContains
from agentlasso.domain.grades import CheckResult, JudgeVerdict, Observation
from agentlasso.domain.test_cases import EvaluationType, TestCaseContent
from agentlasso.grading import EXPECTATION_ID, JudgeRequest, grade_case, judge_requests
from agentlasso.grading.judge_checks import reaches

REPLY = Observation(actual_output="Refunded $42.", tool_calls=())
CRITERION = "States the refund amount"


def judge_result(verdicts: Mapping[str, JudgeVerdict], severity: str = "critical") -> CheckResult:
    check = LlmJudge(id="c6", criterion=CRITERION, severity=severity)  # type: ignore[arg-type]
    content = TestCaseContent(input="q", checks=(check,))
    return grade_case(content, REPLY, verdicts).check_results[0]


def expectation_result(
    evaluation_type: EvaluationType, verdict: JudgeVerdict | None, min_confidence: int = 70
) -> CheckResult:
    content = TestCaseContent(
        input="q",
        checks=(),
        expected_output="The refund amount, $42",
        evaluation_type=evaluation_type,
        min_confidence=min_confidence,
    )
    verdicts = {} if verdict is None else {EXPECTATION_ID: verdict}
    return grade_case(content, REPLY, verdicts).check_results[0]


@pytest.mark.parametrize(
    ("verdicts", "status", "score", "detail"),
    [
        pytest.param(
            {"c6": JudgeVerdict.decided(True, reasoning="It says $42.", model="claude")},
            "passed",
            1.0,
            'The AI judge decided the reply meets the criterion "States the refund amount".',
            id="met",
        ),
        pytest.param(
            {"c6": JudgeVerdict.decided(False, reasoning="No amount.")},
            "failed",
            0.0,
            "The AI judge decided the reply does not meet the criterion "
            '"States the refund amount".',
            id="not-met",
        ),
        pytest.param(
            {},
            "not_graded",
            None,
            "No AI judge verdict: none was supplied for this check.",
            id="no-verdict",
        ),
        pytest.param(
            {"other": JudgeVerdict.decided(True)},
            "not_graded",
            None,
            "No AI judge verdict: none was supplied for this check.",
            id="verdict-for-another-check",
        ),
        pytest.param(
            {"c6": JudgeVerdict.unavailable("no judge is configured")},
            "not_graded",
            None,
            "No AI judge verdict: no judge is configured.",
            id="no-judge-configured",
        ),
        pytest.param(
            {"c6": JudgeVerdict.unavailable("the judge was unreachable after 3 tries.")},
            "not_graded",
            None,
            "No AI judge verdict: the judge was unreachable after 3 tries.",
            id="judge-unreachable",
        ),
        pytest.param(
            {"c6": JudgeVerdict.scored(0.9)},
            "not_graded",
            None,
            "No AI judge verdict: the judge's answer has no pass or fail decision.",
            id="unusable-answer-is-never-read-as-pass",
        ),
    ],
)
def test_llm_judge(
    verdicts: Mapping[str, JudgeVerdict], status: str, score: float | None, detail: str
) -> None:
    result = judge_result(verdicts)
    assert (result.type, result.status, result.score, result.detail) == (
        "llm_judge",
        status,
        score,
        detail,
    )
    assert result.passed is {"passed": True, "failed": False, "not_graded": None}[status]
    assert result.reasoning == (verdicts["c6"].reasoning if "c6" in verdicts else None)


def test_llm_judge_keeps_its_severity() -> None:
    assert judge_result({}, severity="minor").severity == "minor"


@pytest.mark.parametrize(
    ("evaluation_type", "verdict", "min_confidence", "status", "score", "detail"),
    [
        pytest.param(
            "BOOLEAN",
            JudgeVerdict.decided(True),
            70,
            "passed",
            1.0,
            "The AI judge decided the reply matches the expected output.",
            id="boolean-pass",
        ),
        pytest.param(
            "BOOLEAN",
            JudgeVerdict.decided(False),
            70,
            "failed",
            0.0,
            "The AI judge decided the reply does not match the expected output.",
            id="boolean-fail",
        ),
        pytest.param(
            "SCORE",
            JudgeVerdict.scored(0.85),
            70,
            "passed",
            0.85,
            "The AI judge scored the reply 85/100, reaching the minimum 70.",
            id="score-above",
        ),
        pytest.param(
            "SCORE",
            JudgeVerdict.scored(0.7),
            70,
            "passed",
            0.7,
            "The AI judge scored the reply 70/100, reaching the minimum 70.",
            id="score-equal-passes",
        ),
        pytest.param(
            "SCORE",
            JudgeVerdict.scored(0.695),
            70,
            "failed",
            0.695,
            "The AI judge scored the reply 69.5/100, below the minimum 70.",
            id="score-below",
        ),
        pytest.param(
            "SCORE",
            JudgeVerdict.scored(0.0),
            0,
            "passed",
            0.0,
            "The AI judge scored the reply 0/100, reaching the minimum 0.",
            id="zero-floor",
        ),
        pytest.param(
            "SCORE",
            JudgeVerdict.decided(True),
            70,
            "not_graded",
            None,
            "No AI judge verdict: the judge's answer has no score between 0 and 1.",
            id="score-missing",
        ),
        pytest.param(
            "SCORE",
            JudgeVerdict.scored(85),
            70,
            "not_graded",
            None,
            "No AI judge verdict: the judge's answer has no score between 0 and 1.",
            id="score-on-wrong-scale",
        ),
        pytest.param(
            "SCORE",
            JudgeVerdict.scored(float("nan")),
            70,
            "not_graded",
            None,
            "No AI judge verdict: the judge's answer has no score between 0 and 1.",
            id="score-nan",
        ),
        pytest.param(
            "SCORE",
            JudgeVerdict(score=True),  # type: ignore[arg-type]
            70,
            "not_graded",
            None,
            "No AI judge verdict: the judge's answer has no score between 0 and 1.",
            id="score-boolean",
        ),
        pytest.param(
            "BOOLEAN",
            JudgeVerdict(passed=None, score=1.0),
            70,
            "not_graded",
            None,
            "No AI judge verdict: the judge's answer has no pass or fail decision.",
            id="boolean-missing",
        ),
        pytest.param(
            "SCORE",
            None,
            70,
            "not_graded",
            None,
            "No AI judge verdict: none was supplied for this check.",
            id="no-verdict",
        ),
        pytest.param(
            "SCORE",
            JudgeVerdict.unavailable("no judge is configured"),
            70,
            "not_graded",
            None,
            "No AI judge verdict: no judge is configured.",
            id="no-judge",
        ),
    ],
)
def test_expectation(
    evaluation_type: EvaluationType,
    verdict: JudgeVerdict | None,
    min_confidence: int,
    status: str,
    score: float | None,
    detail: str,
) -> None:
    result = expectation_result(evaluation_type, verdict, min_confidence)
    assert (result.id, result.type, result.severity) == ("expectation", "llm_judge", "critical")
    assert (result.status, result.score, result.detail) == (status, score, detail)


@pytest.mark.parametrize("floor", range(101))
def test_a_score_reaches_its_own_floor_despite_float_noise(floor: int) -> None:
    # 0.29 * 100 is 28.999999999999996 in floating point; the judge's 29 must still reach 29.
    assert reaches(floor / 100, floor)
    assert not reaches((floor - 0.5) / 100, floor)


def test_a_blank_expected_output_is_no_expectation() -> None:
    content = TestCaseContent(input="q", checks=(), expected_output="  \n")
    assert grade_case(content, REPLY).check_results == ()


def test_the_expectation_needs_the_reply() -> None:
    content = TestCaseContent(input="q", checks=(), expected_output="x", evaluation_type="BOOLEAN")
    verdicts = {EXPECTATION_ID: JudgeVerdict.decided(True)}
    result = grade_case(content, Observation(actual_output=None), verdicts).check_results[0]
    assert (result.status, result.detail) == (
        "failed",
        "The reply was not reported, so this check cannot be verified.",
    )


def test_judge_requests_list_exactly_the_verdicts_a_case_needs() -> None:
    content = TestCaseContent(
        input="q",
        checks=(
            OutputContains(id="c1", value="x"),
            LlmJudge(id="c2", criterion="Is polite"),
            LlmJudge(criterion="Names the order"),
        ),
        expected_output="A refund of $42",
        evaluation_type="SCORE",
    )
    assert judge_requests(content) == (
        JudgeRequest(
            check_id="c2", kind="llm_judge", criterion="Is polite", evaluation_type="BOOLEAN"
        ),
        JudgeRequest(
            check_id="c3", kind="llm_judge", criterion="Names the order", evaluation_type="BOOLEAN"
        ),
        JudgeRequest(
            check_id="expectation",
            kind="expectation",
            criterion="A refund of $42",
            evaluation_type="SCORE",
        ),
    )


@pytest.mark.parametrize(
    "observation",
    [Observation(actual_output=None), Observation(actual_output="x", agent_error="timed out")],
)
def test_no_judge_requests_when_the_checks_fail_anyway(observation: Observation) -> None:
    content = TestCaseContent(
        input="q", checks=(LlmJudge(id="c1", criterion="x"),), expected_output="y"
    )
    assert judge_requests(content, observation) == ()
    assert judge_requests(content, REPLY) != ()


def test_no_judge_requests_for_a_case_without_judge_checks() -> None:
    assert (
        judge_requests(TestCaseContent(input="q", checks=(OutputContains(id="c1", value="x"),)))
        == ()
    )
