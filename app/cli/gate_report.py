"""The one report of a gated run that `agentlasso ci` and `agentlasso run` both give: the
console lines of a CI log, JUnit XML, and a GitHub step summary."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

import msgspec

from agentlasso.client import Counts, GradedResult, JudgeUsage, RunGate, case_card_url, trial_of
from agentlasso.config import load_client_settings
from agentlasso.domain.grades import CheckResult

# Characters XML 1.0 cannot carry: an agent's reply may contain any of them.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# A CI log and a step summary show this many cases that did not pass; JUnit has every one.
MAX_FAILURES_SHOWN = 50
EXIT_PASS, EXIT_FAIL, EXIT_UNAVAILABLE = 0, 1, 2


class GateReport(msgspec.Struct, frozen=True, kw_only=True):
    """A finished run's gate with every result, and the cases' descriptions by test case id."""

    gate: RunGate
    results: Sequence[GradedResult]
    names: Mapping[str, str]
    time_s: float

    def not_passed(self) -> list[GradedResult]:
        """The results that failed or were not graded, in the order they came."""
        return [result for result in self.results if not (result.graded and result.pass_fail)]

    def card_url(self, result: GradedResult) -> str | None:
        """The result's card in the web app, when the server told us where the run's page is."""
        run_url = self.gate.web_url
        if run_url is None:
            return None
        return case_card_url(run_url, result.test_case_id, trial_of(result))


def finish(report: GateReport, junit: Path | None, out: TextIO = sys.stdout) -> int:
    """Print the report, write JUnit and the step summary; the command's exit code."""
    print_report(report, out)
    if junit is not None:
        junit.write_bytes(junit_xml("agentlasso", report))
    summary_path = load_client_settings().step_summary
    if summary_path:
        append_text(Path(summary_path), step_summary("AgentLasso", report))
    return exit_code(report.gate)


def exit_code(gate: RunGate) -> int:
    """0 when the gate passed, 1 when it did not, 2 when the run itself failed."""
    if gate.status == "failed":
        return EXIT_UNAVAILABLE
    return EXIT_PASS if gate.ci_pass else EXIT_FAIL


def print_report(report: GateReport, out: TextIO) -> None:
    """Each case that did not pass (the first MAX_FAILURES_SHOWN), the counts, the gate."""
    not_passed = report.not_passed()
    for result in not_passed[:MAX_FAILURES_SHOWN]:
        lines = case_lines(result, report.names)
        if (card := report.card_url(result)) is not None:
            lines.append(f"    Case card: {card}")
        print("\n".join(lines), file=out)
    if len(not_passed) > MAX_FAILURES_SHOWN:
        print(f"...and {len(not_passed) - MAX_FAILURES_SHOWN} more (see --junit).", file=out)
    gate = report.gate
    print(summary_line(gate.counts, gate.pass_rate, gate.pass_threshold), file=out)
    if (judge := judge_line(gate.judge)) is not None:
        print(judge, file=out)
    for warning in gate.judge_warnings:
        print(f"Judge warning: {warning}", file=out)
    print(f"CI gate: {'PASS' if gate.ci_pass else f'FAIL: {gate.ci_fail_reason}'}", file=out)
    print_run_page(gate.web_url, out)


def print_run_page(web_url: str | None, out: TextIO | None = None) -> None:
    """Where to read the run in the web app, when the server says where that is."""
    if web_url is not None:
        print(f"Run page: {web_url}", file=out)


def label(result: GradedResult) -> str:
    """PASS, FAIL or SKIP (not graded), as the product document's example prints them."""
    return "SKIP" if not result.graded else "PASS" if result.pass_fail else "FAIL"


def case_name(result: GradedResult, names: Mapping[str, str]) -> str | None:
    """The case's description, with the trial when the run had several."""
    parts = [
        names.get(result.test_case_id) or "",
        f"trial {trial_of(result)}" if trial_of(result) > 1 else "",
    ]
    return ", ".join(part for part in parts if part) or None


def case_lines(result: GradedResult, names: Mapping[str, str]) -> list[str]:
    """The console lines for a case that did not pass: its verdict, then each failed check."""
    name = case_name(result, names)
    title = f"{result.test_case_id} ({name})" if name else result.test_case_id
    lines = [f"{label(result)} {title}: {result.judge_reasoning}"]
    lines += [f"    {check_line(c)}" for c in result.check_results if c.status != "passed"]
    return lines


def check_line(check: CheckResult) -> str:
    """A check that did not pass, with its turn when it is a conversation's turn check:
    `turn 3: c4 tool_called (critical, failed): stripe.refund was never called ...`."""
    turn = "" if check.turn is msgspec.UNSET else f"turn {check.turn}: "
    return f"{turn}{check.id} {check.type} ({check.severity}, {check.status}): {check.detail}"


def percent(value: float | None) -> str:
    """A rate as the example client prints it."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def summary_line(counts: Counts, pass_rate: float | None, threshold: float) -> str:
    """One line with the rate, the threshold and the counts."""
    return (
        f"Pass rate: {percent(pass_rate)} (threshold {percent(threshold)}): "
        f"{counts.passed} passed, {counts.failed} failed, {counts.not_graded} not graded, "
        f"{counts.total - counts.done} without a result, of {counts.total} cases."
    )


def judge_line(usage: JudgeUsage) -> str | None:
    """The AI judge's share of the run, when it was asked anything."""
    if not (usage.calls or usage.cached or usage.stopped):
        return None
    line = (
        f"AI judge: {usage.calls} calls, {usage.cached} answered from the cache, "
        f"{usage.input_tokens:,} input and {usage.output_tokens:,} output tokens, "
        f"${usage.cost_usd:.4f}."
    )
    return f"{line} Stopped: {usage.stopped}" if usage.stopped else line


def junit_xml(suite: str, report: GateReport) -> bytes:
    """JUnit XML: a testcase per case, a failure for each failed one, skipped when not graded;
    with the run's page as the suite's `url` property and each case's card in the case."""
    results = report.results
    root = ElementTree.Element("testsuites")
    failures = sum(r.graded and not r.pass_fail for r in results)
    skipped = sum(not r.graded for r in results)
    testsuite = ElementTree.SubElement(
        root, "testsuite", name=suite, tests=str(len(results)), failures=str(failures),
        errors="0", skipped=str(skipped), time=f"{report.time_s:.3f}",
    )  # fmt: skip
    named = [("url", report.gate.web_url)] if report.gate.web_url is not None else []
    named += [("judge_warning", warning) for warning in report.gate.judge_warnings]
    if named:
        properties = ElementTree.SubElement(testsuite, "properties")
        for name, value in named:
            ElementTree.SubElement(properties, "property", name=name, value=_xml_text(value))
    for result in results:
        _testcase(testsuite, suite, result, report)
    return bytes(ElementTree.tostring(root, encoding="utf-8", xml_declaration=True))


def _testcase(
    parent: ElementTree.Element, suite: str, result: GradedResult, report: GateReport
) -> None:
    name = case_name(result, report.names) or result.test_case_id
    case = ElementTree.SubElement(
        parent, "testcase", classname=suite, name=_xml_text(f"{name} [{result.test_case_id}]")
    )
    card = report.card_url(result)
    if not (result.graded and result.pass_fail):
        tag = "skipped" if not result.graded else "failure"
        element = ElementTree.SubElement(case, tag, message=_xml_text(result.judge_reasoning))
        details = [check_line(c) for c in result.check_results if c.status != "passed"]
        if card is not None:
            # GitLab shows only a failure's (or skip's) text, so the card is named there too.
            details.append(f"Case card: {card}")
        element.text = _xml_text("\n".join(details))
    if card is not None:
        # Jenkins (and most other readers) show a testcase's system-out, passed or not.
        ElementTree.SubElement(case, "system-out").text = card


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def step_summary(title: str, report: GateReport) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY."""
    gate, counts = report.gate, report.gate.counts
    verdict = "passed" if gate.ci_pass else "failed"
    reason = gate.ci_fail_reason
    lines = [
        f"## {title}: {verdict}",
        "",
        f"Pass rate **{percent(gate.pass_rate)}** (threshold {percent(gate.pass_threshold)})."
        + (f" {_md(reason)}" if reason else ""),
        "",
        "| total | passed | failed | not graded | without a result |",
        "|---:|---:|---:|---:|---:|",
        f"| {counts.total} | {counts.passed} | {counts.failed} | {counts.not_graded} "
        f"| {counts.total - counts.done} |",
    ]
    if gate.judge_warnings:
        lines += ["", "**Judge warnings**", ""]
        lines += [f"- {_md(warning)}" for warning in gate.judge_warnings]
    if gate.web_url is not None:
        lines += ["", f"[Open the run in AgentLasso]({_md_url(gate.web_url)})"]
    not_passed = report.not_passed()
    if not_passed:
        lines += ["", "| case | result | why |", "|---|---|---|"]
        for result in not_passed[:MAX_FAILURES_SHOWN]:
            name = _md(case_name(result, report.names) or result.test_case_id)
            card = report.card_url(result)
            cell = name if card is None else f"[{_md_link_text(name)}]({_md_url(card)})"
            lines.append(f"| {cell} | {label(result)} | {_md(result.judge_reasoning)} |")
        if len(not_passed) > MAX_FAILURES_SHOWN:
            lines.append(f"\n…and {len(not_passed) - MAX_FAILURES_SHOWN} more.")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_link_text(text: str) -> str:
    """Text that cannot end a Markdown link early."""
    return text.replace("[", "\\[").replace("]", "\\]")


def _md_url(url: str) -> str:
    """A link target that cannot end early: parentheses and spaces percent-encoded."""
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def append_text(path: Path, text: str) -> None:
    """Append to a file (GitHub collects the step summary this way)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
