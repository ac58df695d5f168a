"""Building a CheckResult from a check and what happened to it."""

from __future__ import annotations

from agentlasso.domain.checks import Check, CheckType, Severity
from agentlasso.domain.grades import CheckResult


def decided(check: Check, check_type: CheckType, ok: bool, detail: str) -> CheckResult:
    """A graded result: passed or failed."""
    return CheckResult(
        id=check.id or "",
        type=check_type,
        severity=check.severity,
        status="passed" if ok else "failed",
        passed=ok,
        detail=detail,
    )


def judged(
    check_id: str,
    severity: Severity,
    ok: bool,
    detail: str,
    *,
    score: float,
    reasoning: str | None,
) -> CheckResult:
    """A graded judge result, with the judge's score and reasoning."""
    return CheckResult(
        id=check_id,
        type="llm_judge",
        severity=severity,
        status="passed" if ok else "failed",
        passed=ok,
        detail=detail,
        score=score,
        reasoning=reasoning,
    )


def not_graded(
    check_id: str, severity: Severity, detail: str, check_type: CheckType = "llm_judge"
) -> CheckResult:
    """A check that could not be decided: a judge without a verdict, a search not run."""
    return CheckResult(
        id=check_id,
        type=check_type,
        severity=severity,
        status="not_graded",
        passed=None,
        detail=detail,
    )


def failed_as(check_id: str, check_type: CheckType, severity: Severity, detail: str) -> CheckResult:
    """A failed result for any check, the implicit expectation included."""
    return CheckResult(
        id=check_id,
        type=check_type,
        severity=severity,
        status="failed",
        passed=False,
        detail=detail,
    )
