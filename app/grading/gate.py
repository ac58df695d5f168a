"""The CI gate on a run, decided from counters alone: complete, something graded, and the
pass rate (passed / graded) at or above the threshold; or, for a no_new_failures gate, no case
that passed in the baseline failing now (counted when the run completed)."""

from __future__ import annotations

from agentlasso.domain.grades import Gate, RunCounts
from agentlasso.domain.runs import Run, RunStatus
from agentlasso.grading.excerpts import count_noun


def decide_gate(counts: RunCounts, pass_threshold: float) -> Gate:
    """pass_rate, ci_pass and, when it fails, the reason in one sentence."""
    if not (isinstance(pass_threshold, int | float) and 0.0 <= pass_threshold <= 1.0):
        raise ValueError(f"pass_threshold must be from 0 to 1, not {pass_threshold!r}")
    pass_rate = counts.passed / counts.graded if counts.graded else None
    reason = _fail_reason(counts, pass_rate, pass_threshold)
    return Gate(pass_rate=pass_rate, ci_pass=reason is None, ci_fail_reason=reason)


def _fail_reason(counts: RunCounts, pass_rate: float | None, threshold: float) -> str | None:
    """Why the run does not pass, or None when it does."""
    missing = counts.total - counts.done
    if missing:
        verb = "has" if missing == 1 else "have"
        return (
            f"Not every test case has a result: {missing} of {count_noun(counts.total, 'case')} "
            f"{verb} no result yet."
        )
    if pass_rate is None:
        return _nothing_graded(counts)
    if pass_rate < threshold:
        rate, floor = percentages(pass_rate, threshold)
        failed = counts.graded - counts.passed
        return (
            f"Pass rate {rate} is below the threshold {floor}: "
            f"{failed} of {count_noun(counts.graded, 'graded case')} failed."
        )
    return None


def _nothing_graded(counts: RunCounts) -> str:
    """Why a complete run graded nothing: no cases, no checks, or only minor ungraded checks."""
    if counts.total == 0:
        return "No test case was graded: the run has no test cases."
    reasons = []
    if counts.no_checks:
        verb = "has" if counts.no_checks == 1 else "have"
        reasons.append(f"{count_noun(counts.no_checks, 'case')} {verb} no checks")
    ungradable = counts.done - counts.no_checks
    if ungradable:
        verb = "has" if ungradable == 1 else "have"
        reasons.append(
            f"{count_noun(ungradable, 'case')} {verb} only minor checks that could not be graded"
        )
    return f"No test case was graded: {' and '.join(reasons)}."


def percentages(rate: float, threshold: float) -> tuple[str, str]:
    """Both as percentages, with enough decimals that a rate below the threshold shows below it."""
    for decimals in range(1, 7):
        shown_rate = f"{rate * 100:.{decimals}f}%"
        shown_threshold = f"{threshold * 100:.{decimals}f}%"
        if shown_rate != shown_threshold:
            break
    return shown_rate, shown_threshold


def run_gate(run: Run) -> Gate:
    """The gate of a stored run as it stands: never a pass while verdicts are awaited. With
    several trials, once the run has counted its cases, the pass rate counts cases (a case
    passes only when every trial passed), not trials."""
    by_case = run.case_counts() if run.trials > 1 else None
    gate = decide_gate(by_case or run.counts(), run.pass_threshold)
    if run.gate == "no_new_failures":
        gate = _no_new_failures(run, gate)
    waiting = run.judge_pending
    # Missing results are the more basic reason; say that one while it holds.
    if not waiting or run.done < run.total:
        return gate
    noun = "case waits" if waiting == 1 else "cases wait"
    reason = f"The AI judge has not finished: {waiting} {noun} for verdicts."
    return Gate(pass_rate=gate.pass_rate, ci_pass=False, ci_fail_reason=reason)


def _no_new_failures(run: Run, by_threshold: Gate) -> Gate:
    """The gate of a run that fails only on new failures: still never a pass while results are
    missing or nothing was graded, but a pass rate under the threshold does not fail it."""
    counts = run.counts()
    if counts.total - counts.done or by_threshold.pass_rate is None:
        return by_threshold
    if run.new_failures is None:
        reason = "The run has not been compared with its baseline yet."
        return Gate(pass_rate=by_threshold.pass_rate, ci_pass=False, ci_fail_reason=reason)
    if run.new_failures:
        verb = "passes" if run.new_failures == 1 else "pass"
        reason = (
            f"{count_noun(run.new_failures, 'case')} that passed in the baseline run no longer "
            f"{verb}."
        )
        return Gate(pass_rate=by_threshold.pass_rate, ci_pass=False, ci_fail_reason=reason)
    return Gate(pass_rate=by_threshold.pass_rate, ci_pass=True, ci_fail_reason=None)


def settled_status(run: Run) -> RunStatus:
    """The run's status once its counters are counted: every result in ends it, or grades it."""
    if run.is_final or run.done < run.total:
        return run.status
    # Every result is in; the run ends when the judge's last verdict lands.
    return "grading" if run.judge_pending else "completed"
