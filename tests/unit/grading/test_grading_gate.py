"""The run gate, decided from counters alone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from agentlasso.domain.grades import Gate, RunCounts
from agentlasso.domain.runs import Run
from agentlasso.grading import decide_gate, run_gate, settled_status
from agentlasso.grading.gate import percentages


def counts(total: int, done: int, graded: int, passed: int, no_checks: int = 0) -> RunCounts:
    return RunCounts(total=total, done=done, graded=graded, passed=passed, no_checks=no_checks)


@pytest.mark.parametrize(
    ("run", "threshold", "gate"),
    [
        pytest.param(
            counts(10, 10, 10, 10),
            1.0,
            Gate(pass_rate=1.0, ci_pass=True, ci_fail_reason=None),
            id="all-pass",
        ),
        pytest.param(
            counts(10, 10, 10, 8),
            1.0,
            Gate(
                pass_rate=0.8,
                ci_pass=False,
                ci_fail_reason="Pass rate 80.0% is below the threshold 100.0%: "
                "2 of 10 graded cases failed.",
            ),
            id="below-threshold",
        ),
        pytest.param(
            counts(10, 10, 10, 8),
            0.8,
            Gate(pass_rate=0.8, ci_pass=True, ci_fail_reason=None),
            id="equal-threshold",
        ),
        pytest.param(
            counts(10, 7, 7, 7),
            1.0,
            Gate(
                pass_rate=1.0,
                ci_pass=False,
                ci_fail_reason="Not every test case has a result: "
                "3 of 10 cases have no result yet.",
            ),
            id="incomplete",
        ),
        pytest.param(
            counts(10, 9, 0, 0),
            0.0,
            Gate(
                pass_rate=None,
                ci_pass=False,
                ci_fail_reason="Not every test case has a result: 1 of 10 cases has no result yet.",
            ),
            id="incomplete-one",
        ),
        pytest.param(
            counts(1, 0, 0, 0),
            0.0,
            Gate(
                pass_rate=None,
                ci_pass=False,
                ci_fail_reason="Not every test case has a result: 1 of 1 case has no result yet.",
            ),
            id="incomplete-single",
        ),
        pytest.param(
            counts(3, 3, 0, 0, no_checks=3),
            1.0,
            Gate(
                pass_rate=None,
                ci_pass=False,
                ci_fail_reason="No test case was graded: 3 cases have no checks.",
            ),
            id="nothing-graded-no-checks",
        ),
        pytest.param(
            counts(3, 3, 0, 0, no_checks=1),
            0.0,
            Gate(
                pass_rate=None,
                ci_pass=False,
                ci_fail_reason="No test case was graded: 1 case has no checks and 2 cases have "
                "only minor checks that could not be graded.",
            ),
            id="nothing-graded-mixed",
        ),
        pytest.param(
            counts(1, 1, 0, 0),
            0.0,
            Gate(
                pass_rate=None,
                ci_pass=False,
                ci_fail_reason="No test case was graded: 1 case has only minor checks that could "
                "not be graded.",
            ),
            id="nothing-graded-minor-ungraded",
        ),
        pytest.param(
            counts(0, 0, 0, 0),
            0.0,
            Gate(
                pass_rate=None,
                ci_pass=False,
                ci_fail_reason="No test case was graded: the run has no test cases.",
            ),
            id="empty-run",
        ),
        pytest.param(
            counts(12, 12, 10, 9, no_checks=2),
            0.9,
            Gate(pass_rate=0.9, ci_pass=True, ci_fail_reason=None),
            id="ungraded-cases-left-out-of-the-rate",
        ),
        pytest.param(
            counts(1, 1, 1, 0),
            0.0,
            Gate(pass_rate=0.0, ci_pass=True, ci_fail_reason=None),
            id="zero-threshold",
        ),
        pytest.param(
            counts(1, 1, 1, 0),
            0.5,
            Gate(
                pass_rate=0.0,
                ci_pass=False,
                ci_fail_reason="Pass rate 0.0% is below the threshold 50.0%: "
                "1 of 1 graded case failed.",
            ),
            id="singular",
        ),
        pytest.param(
            counts(100_000, 100_000, 100_000, 99_999),
            1.0,
            Gate(
                pass_rate=0.99999,
                ci_pass=False,
                ci_fail_reason="Pass rate 99.999% is below the threshold 100.000%: "
                "1 of 100000 graded cases failed.",
            ),
            id="decimals-grow-until-the-rate-shows-below",
        ),
    ],
)
def test_gate(run: RunCounts, threshold: float, gate: Gate) -> None:
    assert decide_gate(run, threshold) == gate


@pytest.mark.parametrize("threshold", [-0.1, 1.01, float("nan"), float("inf"), "1"])
def test_threshold_outside_zero_to_one_is_refused(threshold: object) -> None:
    with pytest.raises(ValueError, match="pass_threshold must be from 0 to 1"):
        decide_gate(counts(1, 1, 1, 1), threshold)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"total": -1, "done": 0, "graded": 0, "passed": 0}, "must not be negative"),
        ({"total": 2, "done": 2, "graded": 1, "passed": 2}, "inconsistent"),
        ({"total": 2, "done": 1, "graded": 1, "passed": 0, "no_checks": 1}, "inconsistent"),
        ({"total": 1, "done": 2, "graded": 0, "passed": 0}, "more results than cases"),
    ],
)
def test_contradictory_counts_are_refused(fields: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RunCounts(**fields)


def test_percentages_give_up_after_six_decimals() -> None:
    assert percentages(0.999999999, 1.0) == ("100.000000%", "100.000000%")


def stored_run(status: str = "running", **counters: int) -> Run:
    """A stored run with these counters (done 10 of 10, all graded and passed, by default)."""
    now = datetime(2026, 11, 30, tzinfo=UTC)
    values: dict[str, Any] = dict(
        total=10, done=10, graded=10, passed=10, errored=0, no_checks=0, judge_pending=0
    )
    values.update(counters)
    return Run(
        id=uuid.uuid4(), project_id=uuid.uuid4(), dataset_id=uuid.uuid4(), seq=1, mode="server",
        status=status, pass_threshold=1.0, trials=1, labels=None, idempotency_key=None,
        request_hash=None, pass_rate=None, ci_pass=False, ci_fail_reason=None, created_at=now,
        updated_at=now, finished_at=None, agent_id=None, concurrency=None, case_count=10,
        chunk_size=None, started_at=None, judge_use_cache=True, judge_stopped=None,
        judge_calls=0, judge_cached=0, judge_input_tokens=0, judge_output_tokens=0,
        judge_cache_read_tokens=0, judge_cache_write_tokens=0, judge_cost_usd=0.0, **values,
    )  # fmt: skip


def test_a_run_waiting_for_verdicts_does_not_pass_and_says_how_many() -> None:
    gate = run_gate(stored_run(judge_pending=3))
    assert gate.ci_pass is False
    assert gate.ci_fail_reason == "The AI judge has not finished: 3 cases wait for verdicts."
    assert run_gate(stored_run(judge_pending=1)).ci_fail_reason == (
        "The AI judge has not finished: 1 case waits for verdicts."
    )


def test_missing_results_are_named_before_awaited_verdicts() -> None:
    gate = run_gate(stored_run(done=8, graded=8, passed=8, judge_pending=2))
    assert gate.ci_fail_reason is not None
    assert gate.ci_fail_reason.startswith("Not every test case has a result: 2 of 10 cases")


def test_a_run_without_awaited_verdicts_has_the_counters_gate() -> None:
    assert run_gate(stored_run()) == Gate(pass_rate=1.0, ci_pass=True, ci_fail_reason=None)


@pytest.mark.parametrize(
    ("run", "status"),
    [
        pytest.param(stored_run(), "completed", id="every-result-in"),
        pytest.param(stored_run(judge_pending=2), "grading", id="verdicts-awaited"),
        pytest.param(stored_run(done=9, graded=9, passed=9), "running", id="results-missing"),
        pytest.param(stored_run("cancelled"), "cancelled", id="final-stays"),
        pytest.param(
            stored_run("awaiting_results", done=0, graded=0, passed=0),
            "awaiting_results",
            id="ci-run-waiting",
        ),
    ],
)
def test_settled_status(run: Run, status: str) -> None:
    assert settled_status(run) == status


def gated_run(new_failures: int | None, **counters: int) -> Run:
    """A stored run with the no_new_failures gate and this many new failures counted."""
    run = stored_run(**counters)
    return msgspec.structs.replace(run, gate="no_new_failures", new_failures=new_failures)


@pytest.mark.parametrize(
    ("run", "ci_pass", "reason"),
    [
        pytest.param(gated_run(0, passed=4), True, None, id="below-threshold-but-nothing-new"),
        pytest.param(
            gated_run(1, passed=9), False,
            "1 case that passed in the baseline run no longer passes.", id="one-new-failure",
        ),
        pytest.param(
            gated_run(3, passed=7), False,
            "3 cases that passed in the baseline run no longer pass.", id="new-failures",
        ),
        pytest.param(
            gated_run(None), False, "The run has not been compared with its baseline yet.",
            id="not-compared-yet",
        ),
        pytest.param(
            gated_run(0, done=9, graded=9, passed=9), False,
            "Not every test case has a result: 1 of 10 cases has no result yet.",
            id="results-missing",
        ),
        pytest.param(
            gated_run(0, graded=0, passed=0, no_checks=10), False,
            "No test case was graded: 10 cases have no checks.", id="nothing-graded",
        ),
    ],
)  # fmt: skip
def test_the_no_new_failures_gate(run: Run, ci_pass: bool, reason: str | None) -> None:
    gate = run_gate(run)
    assert (gate.ci_pass, gate.ci_fail_reason) == (ci_pass, reason)
    assert gate.pass_rate == (run.passed / run.graded if run.graded else None)


def test_with_several_trials_a_counted_run_passes_cases_not_trials() -> None:
    # 10 results: 5 cases x 2 trials, 8 trials passed; 3 cases passed both trials.
    run = msgspec.structs.replace(
        stored_run(passed=8), trials=2, case_count=5, cases_graded=5, cases_passed=3,
        cases_passed_any=5, flaky_count=2,
    )  # fmt: skip
    gate = run_gate(run)
    assert gate.pass_rate == 0.6
    assert (
        gate.ci_fail_reason
        == "Pass rate 60.0% is below the threshold 100.0%: 2 of 5 graded cases failed."
    )
    assert (run.pass_at_k_rate, run.pass_all_k_rate) == (1.0, 0.6)
    not_counted = msgspec.structs.replace(run, cases_graded=None)
    assert run_gate(not_counted).pass_rate == 0.8, "by trial until the run has counted cases"
    assert not_counted.pass_at_k_rate is None and not_counted.pass_all_k_rate is None
