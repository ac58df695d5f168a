"""`agentlasso run`: start a server-mode run, show its progress, and gate on it (contract 7)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TextIO

import msgspec

from app import reports
from app.client import AgentLassoClient, CaseResult, Run
from app.command_errors import run_reporting_errors

EXIT_PASS, EXIT_FAIL, EXIT_UNAVAILABLE = 0, 1, 2
FINAL = ("completed", "cancelled", "failed")
POLL_WAIT_S = 1.0
# Off a terminal (a CI log), a progress line every this many seconds instead of a live bar.
LOG_EVERY_S = 5.0
MAX_FAILURES_SHOWN = 50


class RunOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What `agentlasso run` was asked to do."""

    base_url: str
    api_key: str
    dataset_id: str
    agent_id: str
    wait: bool
    trials: int
    threshold: float | None
    concurrency: int | None
    junit: Path | None


def run_server(options: RunOptions) -> int:
    """Start the run (and with --wait follow it); 0 passed, 1 not, 2 unreachable or failed."""
    return run_reporting_errors(options.base_url, _run(options))


async def _run(options: RunOptions) -> int:
    started = time.monotonic()
    async with AgentLassoClient(options.base_url, options.api_key) as client:
        run = await client.start_server_run(
            options.dataset_id, options.agent_id, pass_threshold=options.threshold,
            trials=options.trials, concurrency=options.concurrency,
        )  # fmt: skip
        print(f"Run {run.run_id}: {run.counts.total} calls to the agent.")
        if not options.wait:
            return EXIT_PASS
        run = await _follow(client, run, started)
        results = [result async for result in client.results(run.run_id)]
        names = await _names_of_shown_failures(client, results)
    return _report(options, run, results, names, time.monotonic() - started)


async def _names_of_shown_failures(
    client: AgentLassoClient, results: list[CaseResult]
) -> dict[str, str]:
    """Descriptions of the cases whose failures are printed, so a log line says which case."""
    shown = {r.test_case_id for r in results if not (r.graded and r.pass_fail)}
    names: dict[str, str] = {}
    for test_case_id in sorted(shown)[:MAX_FAILURES_SHOWN]:
        case = await client.get_test_case(test_case_id)
        if case.description:
            names[test_case_id] = case.description
    return names


async def _follow(client: AgentLassoClient, run: Run, started: float) -> Run:
    """Long-poll the run until it ends, drawing progress as it goes."""
    bar = ProgressBar(sys.stdout, started)
    while run.status not in FINAL:
        run = await client.get_run(run.run_id, wait_s=POLL_WAIT_S)
        bar.show(run)
    bar.close(run)
    return run


class ProgressBar:
    """A live bar on a terminal; a line every few seconds in a CI log."""

    def __init__(self, out: TextIO, started: float) -> None:
        self.out, self.started, self.live = out, started, out.isatty()
        self.logged_at = 0.0
        self.last = ""

    def show(self, run: Run) -> None:
        now = time.monotonic()
        if not self.live and now - self.logged_at < LOG_EVERY_S:
            return
        self.logged_at = now
        self._write(self.line(run), end="" if self.live else "\n")

    def close(self, run: Run) -> None:
        line = self.line(run)
        if self.live or line != self.last:
            self._write(line, end="\n")

    def _write(self, line: str, end: str) -> None:
        self.out.write(("\r" if self.live else "") + line + end)
        self.out.flush()
        self.last = line

    def line(self, run: Run) -> str:
        counts = run.counts
        total = max(counts.total, 1)
        filled = int(30 * counts.done / total)
        elapsed = max(time.monotonic() - self.started, 1e-6)
        return (
            f"[{'#' * filled}{'.' * (30 - filled)}] {counts.done}/{counts.total} done, "
            f"{counts.passed} passed, {counts.failed} failed, {counts.not_graded} not graded, "
            f"{counts.done / elapsed:.0f}/s"
        )


def _report(
    options: RunOptions, run: Run, results: list[CaseResult], names: dict[str, str], time_s: float
) -> int:
    not_passed = [r for r in results if not (r.graded and r.pass_fail)]
    for result in not_passed[:MAX_FAILURES_SHOWN]:
        print("\n".join(reports.case_lines(result, _name(result, names))))
    if len(not_passed) > MAX_FAILURES_SHOWN:
        print(f"...and {len(not_passed) - MAX_FAILURES_SHOWN} more (see --junit).")
    print(reports.summary_line(run.counts, run.pass_rate, run.pass_threshold))
    if (judge := reports.judge_line(run.judge)) is not None:
        print(judge)
    print(f"CI gate: {'PASS' if run.ci_pass else f'FAIL: {run.ci_fail_reason}'}")
    _write_reports(options, run, results, time_s)
    if run.status == "failed":
        return EXIT_UNAVAILABLE
    return EXIT_PASS if run.ci_pass else EXIT_FAIL


def _name(result: CaseResult, names: dict[str, str]) -> dict[str, str]:
    parts = [
        names.get(result.test_case_id, ""),
        f"trial {result.trial}" if result.trial > 1 else "",
    ]
    name = ", ".join(part for part in parts if part)
    return {result.test_case_id: name} if name else {}


def _write_reports(options: RunOptions, run: Run, results: list[CaseResult], time_s: float) -> None:
    if options.junit is not None:
        options.junit.write_bytes(reports.junit_xml("agentlasso", results, {}, time_s))
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        markdown = reports.step_summary(
            "AgentLasso", run.ci_pass, run.ci_fail_reason, run.counts, run.pass_rate,
            run.pass_threshold, results, {},
        )  # fmt: skip
        reports.append_text(Path(summary_path), markdown)
