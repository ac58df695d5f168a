"""`agentlasso run`: start a server-mode run, show its progress, and gate on it."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

import msgspec

from agentlasso.cli.compare_report import (
    CaseText,
    fetch_compared,
    gate_line,
    report_compared,
    selection_line,
)
from agentlasso.cli.errors import run_reporting_errors
from agentlasso.cli.gate_report import EXIT_PASS, GateReport, finish, print_run_page
from agentlasso.client import AgentLassoClient, Run
from agentlasso.domain.conversations import Conversation, first_message

FINAL = ("completed", "cancelled", "failed")
POLL_WAIT_S = 1.0
# Off a terminal (a CI log), a progress line every this many seconds instead of a live bar.
LOG_EVERY_S = 5.0


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
    # Only the cases with one of these tags (none: every case); the version to run.
    tags: tuple[str, ...] = ()
    dataset_version: str | None = None
    gate: str = "threshold"
    # None: the server picks the baseline.
    baseline_run_id: str | None = None
    comment_file: Path | None = None


def run_server(options: RunOptions) -> int:
    """Start the run (and with --wait follow it); 0 passed, 1 not, 2 unreachable or failed."""
    return run_reporting_errors(options.base_url, _run(options))


async def _run(options: RunOptions) -> int:
    started = time.monotonic()
    async with AgentLassoClient(options.base_url, options.api_key) as client:
        run = await client.start_server_run(
            options.dataset_id, options.agent_id, pass_threshold=options.threshold,
            trials=options.trials, concurrency=options.concurrency, gate=options.gate,
            baseline_run_id=options.baseline_run_id, tags=list(options.tags) or None,
            dataset_version=options.dataset_version,
        )  # fmt: skip
        print(f"Run {run.run_id}: {run.counts.total} calls to the agent.")
        print_run_page(run.web_url)
        print(gate_line(run.gate, run.pass_threshold, run.baseline_run_id))
        if chosen := selection_line(run.tags, run.dataset_version):
            print(chosen)
        if not options.wait:
            return EXIT_PASS
        run = await _follow(client, run, started)
        results = [result async for result in client.results(run.run_id)]
        texts = {
            case.id: CaseText.of(
                case.description,
                first_message(
                    case.input,
                    case.conversation if isinstance(case.conversation, Conversation) else None,
                ),
            )
            async for case in client.test_cases(options.dataset_id)
        }
        for_comment = options.comment_file is not None
        compared = await fetch_compared(client, run, for_comment=for_comment)
    names = {case_id: text.description for case_id, text in texts.items() if text.description}
    report = GateReport(gate=run, results=results, names=names, time_s=time.monotonic() - started)
    report_compared(report, compared, texts, options.comment_file)
    return finish(report, options.junit)


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
