"""The case rules: score, pass, graded, partially graded, judge_reasoning."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
import pytest

from agentlasso.domain.checks import (
    CHECK_CLASSES,
    CHECK_TYPES,
    Check,
    LlmJudge,
    OutputContains,
    OutputNotContains,
    OutputValidJson,
    ToolCalled,
    ToolNotCalled,
    ToolOrder,
    duplicate_check_ids,
)
from agentlasso.domain.grades import (
    CaseResult,
    CheckResult,
    JudgeVerdict,
    Observation,
    ToolCall,
    UngradedItem,
)
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import EXPECTATION_ID, grade_case
from agentlasso.grading.case import summarise
from agentlasso.grading.context import GradingContext
from agentlasso.grading.plan import CasePlan
from agentlasso.grading.registry import GRADERS, Grader

REPLY = Observation(
    actual_output='{"refund": "3-5 business days"}',
    tool_calls=(ToolCall("orders.lookup"), ToolCall("stripe.refund")),
)
PASSES = OutputContains(value="business days")
FAILS = OutputContains(value="never in the reply")
JUDGED = LlmJudge(criterion="States the refund amount")


def check(template: Check, check_id: str, severity: str = "critical") -> Check:
    return msgspec.structs.replace(template, id=check_id, severity=severity)


def grade(
    *checks: Check,
    observation: Observation = REPLY,
    verdicts: Mapping[str, JudgeVerdict] | None = None,
    **content: object,
) -> CaseResult:
    case = TestCaseContent(input="q", checks=checks, **content)  # type: ignore[arg-type]
    return grade_case(case, observation, verdicts or {})


def outcome(result: CaseResult) -> tuple[float | None, bool, bool, bool]:
    return (result.score, result.pass_fail, result.graded, result.partially_graded)


@pytest.mark.parametrize(
    ("checks", "expected", "reasoning"),
    [
        pytest.param(
            (check(PASSES, "c1"), check(PASSES, "c2", "minor")),
            (1.0, True, True, False),
            "2/2 checks passed.",
            id="all-pass",
        ),
        pytest.param(
            (check(PASSES, "c1"), check(FAILS, "c2", "minor")),
            (0.5, True, True, False),
            "1/2 checks passed; failed (minor): c2 output_contains.",
            id="minor-failure-still-passes",
        ),
        pytest.param(
            (check(FAILS, "c1"), check(PASSES, "c2", "minor")),
            (0.5, False, True, False),
            "1/2 checks passed; failed (critical): c1 output_contains.",
            id="critical-failure-fails",
        ),
        pytest.param(
            (check(FAILS, "c1", "minor"), check(FAILS, "c2", "minor")),
            (0.0, True, True, False),
            "0/2 checks passed; failed (minor): c1 output_contains, c2 output_contains.",
            id="only-minor-failures-pass-with-score-zero",
        ),
        pytest.param(
            (),
            (None, False, False, False),
            "No checks, so the case is not graded.",
            id="no-checks-not-graded",
        ),
        pytest.param(
            (check(JUDGED, "c1", "minor"), check(JUDGED, "c2", "minor")),
            (None, False, False, True),
            "No check could be graded. Not graded: c1 llm_judge (minor), c2 llm_judge (minor).",
            id="every-check-minor-and-ungraded",
        ),
        pytest.param(
            (
                check(JUDGED, "c1"),
                check(FAILS, "c2", "minor"),
                check(OutputValidJson(), "c3", "minor"),
                check(OutputNotContains(value="refund"), "c4", "minor"),
            ),
            (pytest.approx(1 / 3), False, True, True),
            "1/3 checks passed; failed (minor): c2 output_contains, c4 output_not_contains. "
            "Not graded: c1 llm_judge (critical).",
            id="critical-ungraded-next-to-minor-failures",
        ),
        pytest.param(
            (check(JUDGED, "c1"),),
            (None, False, True, True),
            "No check could be graded. Not graded: c1 llm_judge (critical).",
            id="only-a-critical-ungraded-check-is-graded-and-fails",
        ),
        pytest.param(
            (check(PASSES, "c1"), check(JUDGED, "c2", "minor")),
            (1.0, True, True, True),
            "1/1 checks passed. Not graded: c2 llm_judge (minor).",
            id="minor-ungraded-does-not-block-a-pass",
        ),
        pytest.param(
            (
                check(ToolCalled(tool="stripe.refund"), "c1"),
                check(ToolOrder(tools=("orders.lookup", "stripe.refund")), "c2", "minor"),
                check(PASSES, "c3"),
                check(OutputNotContains(value=r"\b(?:\d[ -]?){13,16}\b", regex=True), "c4"),
                check(OutputValidJson(), "c5", "minor"),
                check(ToolNotCalled(tool="email.send"), "c6"),
            ),
            (1.0, True, True, False),
            "6/6 checks passed.",
            id="every-deterministic-type",
        ),
    ],
)
def test_case_rules(
    checks: tuple[Check, ...], expected: tuple[float | None, bool, bool, bool], reasoning: str
) -> None:
    result = grade(*checks)
    assert outcome(result) == expected
    assert result.judge_reasoning == reasoning


def test_a_score_expectation_counts_its_score() -> None:
    result = grade(
        check(PASSES, "c1"),
        expected_output="The refund timing",
        verdicts={EXPECTATION_ID: JudgeVerdict.scored(0.8)},
    )
    assert outcome(result) == (pytest.approx(0.9), True, True, False)
    assert result.judge_reasoning == "2/2 checks passed."


def test_a_low_score_expectation_fails_the_case() -> None:
    result = grade(
        check(PASSES, "c1"),
        expected_output="The refund timing",
        min_confidence=90,
        verdicts={EXPECTATION_ID: JudgeVerdict.scored(0.8)},
    )
    # A failing SCORE expectation still counts its score, not 0.
    assert outcome(result) == (pytest.approx(0.9), False, True, False)
    assert result.judge_reasoning == (
        "1/2 checks passed; failed (critical): expectation llm_judge."
    )


def test_an_expectation_alone_is_a_check() -> None:
    result = grade(expected_output="x", verdicts={EXPECTATION_ID: JudgeVerdict.unavailable("down")})
    assert outcome(result) == (None, False, True, True)
    assert (
        result.judge_reasoning
        == "No check could be graded. Not graded: expectation llm_judge (critical)."
    )


def test_judge_checks_with_verdicts() -> None:
    result = grade(
        check(JUDGED, "c1"),
        check(JUDGED, "c2", "minor"),
        verdicts={"c1": JudgeVerdict.decided(True), "c2": JudgeVerdict.decided(False)},
    )
    assert outcome(result) == (0.5, True, True, False)


def test_the_reasoning_line_of_the_contract() -> None:
    results = tuple(
        CheckResult(
            id=f"c{n}",
            type=kind,
            severity="minor" if n == 5 else "critical",
            status="failed" if n == 5 else "passed",
            passed=n != 5,
            detail="",
        )
        for n, kind in enumerate(
            (
                "tool_called",
                "tool_order",
                "output_contains",
                "output_not_contains",
                "output_valid_json",
            ),
            start=1,
        )
    )
    item = UngradedItem(kind="free_text_rubric_item", source="s", text="t", reason="r")
    result = summarise(results, CasePlan((), (item,), False))
    assert result.judge_reasoning == (
        "4/5 checks passed; failed (minor): c5 output_valid_json. "
        "Not graded: 1 free-text rubric item."
    )
    assert (result.pass_fail, result.partially_graded) == (True, True)


def test_ungraded_items_are_counted_by_kind() -> None:
    content = TestCaseContent(
        input="q",
        evaluation_criteria_json={
            "guardrails": [1, 2],
            "semantic_guardrails": ["a", "b"],
            "expected_tool_calls": [None],
        },
    )
    result = grade_case(content, REPLY)
    assert result.judge_reasoning == (
        "No checks, so the case is not graded. "
        "Not graded: 2 free-text rubric items, 3 unreadable criteria."
    )
    assert outcome(result) == (None, False, False, True)
    one = grade_case(
        TestCaseContent(input="q", evaluation_criteria_json={"guardrails": [1]}), REPLY
    )
    assert one.judge_reasoning.endswith("Not graded: 1 unreadable criterion.")


def test_long_lists_are_cut_in_the_reasoning_line() -> None:
    failing = [check(FAILS, f"f{n}") for n in range(15)]
    ungraded = [check(JUDGED, f"j{n}", "minor") for n in range(12)]
    line = grade(*failing, *ungraded).judge_reasoning
    assert line == (
        "0/15 checks passed; failed (critical): "
        + ", ".join(f"f{n} output_contains" for n in range(10))
        + " and 5 more. Not graded: "
        + ", ".join(f"j{n} llm_judge (minor)" for n in range(10))
        + ", 2 more checks."
    )


def test_a_missing_reply_fails_reply_checks_only() -> None:
    observation = Observation(actual_output=None, tool_calls=(ToolCall("stripe.refund"),))
    result = grade(
        check(ToolCalled(tool="stripe.refund"), "c1"),
        check(PASSES, "c2"),
        check(OutputNotContains(value="x"), "c3"),
        check(OutputValidJson(), "c4", "minor"),
        check(JUDGED, "c5"),
        observation=observation,
        verdicts={"c5": JudgeVerdict.decided(True)},
    )
    assert [r.status for r in result.check_results] == ["passed"] + ["failed"] * 4
    assert {r.detail for r in result.check_results[1:]} == {
        "The reply was not reported, so this check cannot be verified."
    }
    assert outcome(result) == (0.2, False, True, False)


def test_missing_tool_calls_fail_tool_checks_only() -> None:
    observation = Observation(actual_output="business days", tool_calls=None)
    result = grade(
        check(ToolCalled(tool="a"), "c1"),
        check(ToolNotCalled(tool="a"), "c2"),
        check(ToolOrder(tools=("a",)), "c3"),
        check(PASSES, "c4"),
        observation=observation,
    )
    assert [r.status for r in result.check_results] == ["failed"] * 3 + ["passed"]


def test_a_failed_agent_call_fails_every_check_with_its_reason() -> None:
    observation = Observation(agent_error="the agent call timed out after 30 s (3 tries)")
    result = grade(
        check(ToolNotCalled(tool="a"), "c1"),
        check(OutputNotContains(value="x"), "c2", "minor"),
        check(JUDGED, "c3"),
        observation=observation,
        verdicts={"c3": JudgeVerdict.decided(True), EXPECTATION_ID: JudgeVerdict.decided(True)},
        expected_output="x",
    )
    assert [(r.status, r.detail) for r in result.check_results] == [
        ("failed", "The agent call timed out after 30 s (3 tries).")
    ] * 4
    assert outcome(result) == (0.0, False, True, False)


@pytest.mark.parametrize(
    ("agent_error", "detail"),
    [
        ("HTTP 500 from the agent.", "HTTP 500 from the agent."),
        ("  ", "The agent call failed."),
    ],
)
def test_the_agent_error_is_one_sentence(agent_error: str, detail: str) -> None:
    result = grade(check(PASSES, "c1"), observation=Observation(agent_error=agent_error))
    assert result.check_results[0].detail == detail


def test_a_check_that_raises_fails_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(check: Check, context: GradingContext) -> CheckResult:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(GRADERS, ToolCalled, Grader("tool_called", "tool_calls", broken))  # type: ignore[index]
    result = grade(check(ToolCalled(tool="a"), "c1", "minor"), check(PASSES, "c2"))
    assert [(r.id, r.type, r.status, r.detail) for r in result.check_results] == [
        (
            "c1",
            "tool_called",
            "failed",
            "Grading this check failed unexpectedly: ZeroDivisionError: division by zero",
        ),
        ("c2", "output_contains", "passed", 'The reply contains "business days".'),
    ]
    assert result.pass_fail is True


class StrayCheck(OutputContains, tag="stray"):
    """A check type added without a grader."""


def test_a_check_type_without_a_grader_fails_alone() -> None:
    result = grade(StrayCheck(id="c1", value="x"), check(PASSES, "c2"))
    assert [(r.type, r.status, r.detail) for r in result.check_results] == [
        ("stray", "failed", "AgentLasso has no grader for checks of type stray."),
        ("output_contains", "passed", 'The reply contains "business days".'),
    ]


def test_checks_without_ids_are_graded_with_assigned_ids() -> None:
    result = grade(PASSES, check(PASSES, "c1"), FAILS)
    assert [r.id for r in result.check_results] == ["c2", "c1", "c3"]


@pytest.mark.parametrize(
    ("ids", "duplicates"),
    [
        (("c1", "c2", "c3"), []),
        (("c1", "c1"), [1]),
        (("a", None, "a", "a", None), [2, 3]),
        (("C1", "c1"), []),
    ],
)
def test_duplicate_check_ids_are_found(ids: tuple[str | None, ...], duplicates: list[int]) -> None:
    checks = tuple(OutputContains(id=check_id, value="x") for check_id in ids)
    assert duplicate_check_ids(checks) == duplicates


def test_duplicate_ids_do_not_crash_grading() -> None:
    result = grade(check(PASSES, "c1"), check(FAILS, "c1", "minor"))
    assert [r.id for r in result.check_results] == ["c1", "c1"]


def test_results_serialise_to_the_contract_json() -> None:
    result = grade(check(PASSES, "c1"), check(JUDGED, "c2", "minor"))
    assert msgspec.json.decode(msgspec.json.encode(result)) == {
        "score": 1.0,
        "pass_fail": True,
        "graded": True,
        "partially_graded": True,
        "judge_reasoning": "1/1 checks passed. Not graded: c2 llm_judge (minor).",
        "check_results": [
            {
                "id": "c1",
                "type": "output_contains",
                "severity": "critical",
                "status": "passed",
                "passed": True,
                "detail": 'The reply contains "business days".',
                "score": None,
                "reasoning": None,
            },
            {
                "id": "c2",
                "type": "llm_judge",
                "severity": "minor",
                "status": "not_graded",
                "passed": None,
                "detail": "No AI judge verdict: none was supplied for this check.",
                "score": None,
                "reasoning": None,
            },
        ],
        "ungraded_items": [],
    }


def test_grading_is_deterministic() -> None:
    checks = (check(PASSES, "c1"), check(FAILS, "c2"), check(JUDGED, "c3"))
    assert grade(*checks) == grade(*checks)


def test_the_line_says_why_checks_could_not_run() -> None:
    content = TestCaseContent(
        input="refund",
        checks=(
            ToolCalled(id="c1", tool="stripe.refund"),
            OutputContains(id="c2", value="refund"),
        ),
    )
    no_reply = grade_case(content, Observation(tool_calls=()))
    assert no_reply.judge_reasoning == (
        "0/2 checks passed; failed (critical): c1 tool_called, c2 output_contains. "
        "The reply was not reported."
    )
    nothing = grade_case(content, Observation())
    assert nothing.judge_reasoning.endswith(
        "The reply was not reported. The tool calls were not reported."
    )
    agent_down = grade_case(content, Observation(agent_error="the agent answered HTTP 503"))
    assert agent_down.judge_reasoning.endswith("c2 output_contains. The agent answered HTTP 503.")
    reported = grade_case(content, Observation(actual_output="", tool_calls=()))
    assert "reported" not in reported.judge_reasoning


def test_every_check_class_has_a_grader_under_its_own_wire_name() -> None:
    assert set(GRADERS) == set(CHECK_CLASSES)
    assert [GRADERS[cls].check_type for cls in CHECK_CLASSES] == list(CHECK_TYPES)
