"""Properties of the case rules and the gate that must hold for any input."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlasso.domain.checks import (
    LlmJudge,
    OutputContains,
    OutputNotContains,
    OutputValidJson,
    ToolCalled,
    ToolNotCalled,
    ToolOrder,
)
from agentlasso.domain.grades import CaseResult, JudgeVerdict, Observation, RunCounts, ToolCall
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import EXPECTATION_ID, decide_gate, grade_case

TOOLS = ("orders.lookup", "stripe.refund", "Stripe.Refund", "email.send")
WORDS = ("refund", "REFUND", "straße", "{", "}", "[1]", "guarantee", "(", "\\d+", "(?-i)R")

severities = st.sampled_from(["critical", "minor"])
tools = st.sampled_from(TOOLS)
words = st.sampled_from(WORDS)
unbuilt_checks = st.one_of(
    st.builds(ToolCalled, tool=tools, severity=severities),
    st.builds(ToolNotCalled, tool=tools, severity=severities),
    st.builds(
        ToolOrder, tools=st.lists(tools, min_size=1, max_size=3).map(tuple), severity=severities
    ),
    st.builds(OutputContains, value=words, regex=st.booleans(), severity=severities),
    st.builds(OutputNotContains, value=words, regex=st.booleans(), severity=severities),
    st.builds(OutputValidJson, severity=severities),
    st.builds(LlmJudge, criterion=st.just("Is polite"), severity=severities),
)
check_lists = st.lists(unbuilt_checks, max_size=6).map(
    lambda checks: tuple(
        msgspec.structs.replace(check, id=f"c{index + 1}") for index, check in enumerate(checks)
    )
)
verdicts = st.one_of(
    st.builds(JudgeVerdict.decided, st.booleans()),
    st.builds(JudgeVerdict.scored, st.floats(0, 1)),
    st.builds(JudgeVerdict.unavailable, st.just("no judge is configured")),
)
observations = st.builds(
    Observation,
    actual_output=st.none() | st.lists(words, max_size=5).map(" ".join),
    tool_calls=st.none() | st.lists(tools.map(ToolCall), max_size=5).map(tuple),
    unreadable_tool_calls=st.sampled_from([(), ("entry 1 has no tool name",)]),
    agent_error=st.sampled_from([None, None, None, "the agent call timed out"]),
)


@st.composite
def graded_cases(draw: st.DrawFn) -> tuple[TestCaseContent, Observation, dict[str, JudgeVerdict]]:
    checks = draw(check_lists)
    content = TestCaseContent(
        input="q",
        checks=checks,
        expected_output=draw(st.sampled_from([None, "A refund of $42"])),
        evaluation_type=draw(st.sampled_from(["BOOLEAN", "SCORE"])),
        min_confidence=draw(st.integers(0, 100)),
    )
    ids = [check.id or "" for check in checks] + [EXPECTATION_ID]
    chosen = draw(st.dictionaries(st.sampled_from(ids), verdicts))
    return content, draw(observations), chosen


@settings(max_examples=300)
@given(graded_cases())
def test_case_invariants(
    case: tuple[TestCaseContent, Observation, dict[str, JudgeVerdict]],
) -> None:
    content, observation, chosen = case
    result = grade_case(content, observation, chosen)
    statuses = [r.status for r in result.check_results]
    assert result.score is None or 0.0 <= result.score <= 1.0
    assert (result.score is None) is ("passed" not in statuses and "failed" not in statuses)
    if any(r.severity == "critical" and r.status == "failed" for r in result.check_results):
        assert not result.pass_fail
    if any(r.severity == "critical" and r.status == "not_graded" for r in result.check_results):
        assert not result.pass_fail
        assert result.graded
    assert not result.pass_fail or result.graded
    assert result.partially_graded is ("not_graded" in statuses)
    assert (not result.check_results) <= (not result.graded)
    assert "\n" not in result.judge_reasoning and result.judge_reasoning.endswith(".")
    for check_result in result.check_results:
        assert (
            check_result.passed
            is {"passed": True, "failed": False, "not_graded": None}[check_result.status]
        )


@settings(max_examples=300)
@given(graded_cases())
def test_dropping_a_minor_ungraded_check_never_changes_pass(
    case: tuple[TestCaseContent, Observation, dict[str, JudgeVerdict]],
) -> None:
    content, observation, chosen = case
    result = grade_case(content, observation, chosen)
    for check_result in result.check_results:
        if check_result.severity == "minor" and check_result.status == "not_graded":
            kept = tuple(c for c in content.checks or () if c.id != check_result.id)
            smaller = msgspec.structs.replace(content, checks=kept)
            assert grade_case(smaller, observation, chosen).pass_fail is result.pass_fail


@st.composite
def run_counts(draw: st.DrawFn) -> RunCounts:
    total = draw(st.integers(0, 50))
    done = draw(st.integers(0, total))
    no_checks = draw(st.integers(0, done))
    graded = draw(st.integers(0, done - no_checks))
    passed = draw(st.integers(0, graded))
    return RunCounts(total=total, done=done, graded=graded, passed=passed, no_checks=no_checks)


@settings(max_examples=500)
@given(run_counts(), st.floats(0, 1))
def test_gate_invariants(counts: RunCounts, threshold: float) -> None:
    gate = decide_gate(counts, threshold)
    assert (gate.pass_rate is None) is (counts.graded == 0)
    if gate.ci_pass:
        assert counts.done == counts.total and counts.graded > 0
        assert gate.pass_rate is not None and gate.pass_rate >= threshold
    assert gate.ci_pass is (gate.ci_fail_reason is None)
    if gate.ci_fail_reason is not None:
        assert gate.ci_fail_reason.endswith(".") and "\n" not in gate.ci_fail_reason


@given(st.integers(1, 1000), st.data())
def test_a_pass_rate_equal_to_the_threshold_passes(graded: int, data: st.DataObject) -> None:
    passed = data.draw(st.integers(0, graded))
    # The threshold as a client would send it: the decimal text of the same fraction.
    threshold = float(repr(passed / graded))
    counts = RunCounts(total=graded, done=graded, graded=graded, passed=passed)
    assert decide_gate(counts, threshold).ci_pass


@settings(max_examples=100)
@given(st.lists(graded_cases(), max_size=8), st.floats(0, 1))
def test_gate_over_graded_cases(
    cases: list[tuple[TestCaseContent, Observation, dict[str, JudgeVerdict]]], threshold: float
) -> None:
    results: list[CaseResult] = [grade_case(*case) for case in cases]
    counts = RunCounts(
        total=len(results),
        done=len(results),
        graded=sum(r.graded for r in results),
        passed=sum(r.pass_fail for r in results),
        no_checks=sum(not r.check_results for r in results),
    )
    gate = decide_gate(counts, threshold)
    assert (gate.pass_rate is None) is (not any(r.graded for r in results))
