"""Grading one case: every check, then the case rules (score, pass, graded, the reasoning)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agentlasso.domain.checks import Check, CheckType, type_of
from agentlasso.domain.grades import (
    CaseResult,
    CheckResult,
    DeclaredTools,
    JudgeVerdict,
    Observation,
)
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading.context import GradingContext, blocking_causes
from agentlasso.grading.judge_checks import EXPECTATION_ID, grade_expectation
from agentlasso.grading.outcomes import failed_as
from agentlasso.grading.plan import CasePlan, expected_output, plan_case
from agentlasso.grading.reasoning import Tally, reasoning_line
from agentlasso.grading.registry import GRADERS

_NO_VERDICTS: Mapping[str, JudgeVerdict] = {}


def never_out_of_time() -> bool:
    """The default clock: grading with no time limit."""
    return False


_NEVER = never_out_of_time


def grade_case(
    content: TestCaseContent,
    observation: Observation,
    verdicts: Mapping[str, JudgeVerdict] = _NO_VERDICTS,
    out_of_time: Callable[[], bool] = _NEVER,
    declared_tools: DeclaredTools | None = None,
) -> CaseResult:
    """Grade one case's observation against its checks; verdicts are keyed by check id.

    `out_of_time` says when the caller's time for grading is spent: regular expressions not
    run by then are not graded, saying so. `declared_tools` are the input schemas of the
    agent's tools, for tool_args_valid.
    """
    plan = plan_case(content)
    context = GradingContext(observation, verdicts, out_of_time, declared_tools)
    results = grade_checks(plan.checks, context)
    if expected_output(content) is not None:
        results.append(expectation_check(content, context))
    return summarise(tuple(results), plan, blocking_causes(context, results))


def grade_checks(checks: tuple[Check, ...], context: GradingContext) -> list[CheckResult]:
    """Each check's result; a grader that raises is a bug, recorded as a failed check."""
    results: list[CheckResult] = []
    # One loop with no helper call per check: this is the hot path of a 100,000-case run.
    for check in checks:
        grader = GRADERS.get(type(check))
        if grader is None:
            results.append(_ungradable(check))
            continue
        check_type, needs, grade = grader
        blocked = context.unmet[needs]
        if blocked is not None:
            results.append(failed_as(check.id or "", check_type, check.severity, blocked))
            continue
        try:
            results.append(grade(check, context))
        except Exception as exc:  # one broken check must not stop the others
            results.append(_crashed(check.id or "", check_type, check, exc))
    return results


def _ungradable(check: Check) -> CheckResult:
    """A failed result for a check type with no grader (a new type added without one)."""
    tag = type_of(type(check))
    detail = f"AgentLasso has no grader for checks of type {tag}."
    return failed_as(check.id or "", tag, check.severity, detail)


def expectation_check(content: TestCaseContent, context: GradingContext) -> CheckResult:
    """The implicit critical check on expected_output, under the same rules as a judge check
    (failed, saying so, when the reply it judges is missing)."""
    blocked = context.unmet["reply"]
    if blocked is not None:
        return failed_as(EXPECTATION_ID, "llm_judge", "critical", blocked)
    return grade_expectation(content, context)


def _crashed(check_id: str, check_type: CheckType, check: Check, exc: Exception) -> CheckResult:
    """A failed result naming the unexpected error."""
    detail = f"Grading this check failed unexpectedly: {type(exc).__name__}: {exc}"
    return failed_as(check_id, check_type, check.severity, detail[:500])


def summarise(
    results: tuple[CheckResult, ...], plan: CasePlan, causes: tuple[str, ...] = ()
) -> CaseResult:
    """Score, pass, graded and the one-line reasoning from the check results.

    Score is the mean over graded checks; a case passes when no critical check failed or went
    ungraded; it is graded when some check was, or a critical one could not be.
    """
    passed = 0
    score_sum = 0.0
    failed_critical: list[CheckResult] = []
    failed_minor: list[CheckResult] = []
    ungraded: list[CheckResult] = []
    for result in results:
        if result.passed is None:
            ungraded.append(result)
            continue
        # Judge results carry their own score (a SCORE expectation's 0 to 1); others 1 or 0.
        if result.score is not None:
            score_sum += result.score
        elif result.passed:
            score_sum += 1.0
        if result.passed:
            passed += 1
        elif result.severity == "critical":
            failed_critical.append(result)
        else:
            failed_minor.append(result)
    graded = len(results) - len(ungraded)
    critical_ungraded = any(result.severity == "critical" for result in ungraded)
    is_graded = bool(results) and (graded > 0 or critical_ungraded)
    tally = Tally(graded, passed, failed_critical, failed_minor, ungraded)
    return CaseResult(
        score=score_sum / graded if graded else None,
        pass_fail=is_graded and not failed_critical and not critical_ungraded,
        graded=is_graded,
        # Free-text rubric items count too: part of what the case asks for went unchecked.
        partially_graded=bool(ungraded) or bool(plan.ungraded_items),
        judge_reasoning=reasoning_line(tally, plan, causes),
        check_results=results,
        ungraded_items=plan.ungraded_items,
    )
