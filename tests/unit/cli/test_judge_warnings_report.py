"""The gate's doubts about its AI judge where a CI system shows them: the console, JUnit, the
GitHub step summary and the pull-request comment (contract section 15)."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ElementTree
from typing import Any

import msgspec

from agentlasso.cli.gate_report import GateReport, junit_xml, print_report, step_summary
from agentlasso.cli.pr_comment import WARNINGS_SHOWN, ComparisonSummary, render_comment
from agentlasso.client import BucketCounts, RunGate

WARNING = (
    "The AI judge agrees with people on \u201cStates the refund amount\u201d at kappa 0.31 "
    "over 40 labelled results, below 0.6: its verdicts deserve a look."
)


def gate(warnings: list[str]) -> RunGate:
    counts = {"total": 1, "done": 1, "graded": 1, "passed": 1, "failed": 0, "not_graded": 0,
              "errored": 0}  # fmt: skip
    judge = {"calls": 1, "cached": 0, "pending": 0, "input_tokens": 10, "output_tokens": 5,
             "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.0,
             "stopped": None}  # fmt: skip
    fields: dict[str, Any] = {
        "run_id": "run-1", "status": "completed", "pass_rate": 1.0, "pass_threshold": 0.9,
        "ci_pass": True, "ci_fail_reason": None, "counts": counts, "judge": judge,
        "web_url": None, "gate": "threshold", "baseline_run_id": None, "new_failures": 0,
        "pass_at_k_rate": None, "pass_all_k_rate": None, "flaky_count": None,
        "judge_warnings": warnings,
    }  # fmt: skip
    return msgspec.convert(fields, RunGate)


def report(warnings: list[str]) -> GateReport:
    return GateReport(gate=gate(warnings), results=[], names={}, time_s=1.0)


def test_the_console_junit_and_step_summary_carry_each_warning() -> None:
    out = io.StringIO()
    print_report(report([WARNING]), out)
    assert f"Judge warning: {WARNING}" in out.getvalue()
    suite = ElementTree.fromstring(junit_xml("agentlasso", report([WARNING]))).find("testsuite")
    assert suite is not None
    values = [p.get("value") for p in suite.iter("property") if p.get("name") == "judge_warning"]
    assert values == [WARNING]
    summary = step_summary("AgentLasso", report([WARNING]))
    assert "**Judge warnings**" in summary and f"- {WARNING}" in summary


def test_a_run_without_warnings_says_nothing_of_them() -> None:
    out = io.StringIO()
    print_report(report([]), out)
    assert "Judge warning" not in out.getvalue()
    assert b"judge_warning" not in junit_xml("agentlasso", report([]))
    assert "Judge warnings" not in step_summary("AgentLasso", report([]))


def test_the_pull_request_comment_lists_the_first_warnings_and_counts_the_rest() -> None:
    counts = msgspec.convert({name: 0 for name in BucketCounts.__struct_fields__}, BucketCounts)
    warnings = [f"{WARNING} ({n})" for n in range(WARNINGS_SHOWN + 2)]
    summary = ComparisonSummary(
        run_id="run-1", baseline_run_id=None, run_url=None, gate_passed=True, gate_reason=None,
        pass_rate=1.0, pass_threshold=0.9, counts=counts, new_failures=[], others={},
        truncated_from={}, judge_warnings=warnings,
    )  # fmt: skip
    comment = render_comment(summary)
    assert "**Judge warnings**" in comment
    assert f"({WARNINGS_SHOWN - 1})" in comment and f"({WARNINGS_SHOWN})" not in comment
    assert "…and 2 more on the run." in comment
