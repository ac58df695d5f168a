"""`agentlasso ci`: the CI gate where the CI job calls its own agent (contract 5.1 and 7)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
import msgspec

from app import reports
from app.client import (
    AgentLassoClient,
    CaseResult,
    PlatformUnavailable,
    ResultsAnswer,
    ResultToPost,
    RunTestCase,
)
from app.command_errors import run_reporting_errors
from app.local_agents import AgentCaller, CommandAgent, HttpAgent, failed

EXIT_PASS, EXIT_FAIL, EXIT_UNAVAILABLE = 0, 1, 2
POST_TRIES = 3


class CiOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What `agentlasso ci` was asked to do."""

    base_url: str
    api_key: str
    dataset_id: str
    agent_url: str | None
    agent_cmd: str | None
    threshold: float | None
    concurrency: int
    batch_size: int
    timeout_s: float
    junit: Path | None


def run_ci(options: CiOptions) -> int:
    """Run the gate; the exit code is 0 (pass), 1 (fail) or 2 (platform unreachable)."""
    return run_reporting_errors(options.base_url, _run(options))


async def _run(options: CiOptions) -> int:
    started = time.monotonic()
    async with (
        AgentLassoClient(options.base_url, options.api_key) as client,
        httpx.AsyncClient(limits=httpx.Limits(max_connections=options.concurrency)) as http,
    ):
        run = await client.create_run(options.dataset_id, pass_threshold=options.threshold)
        print(f"Run {run.run_id}: {len(run.test_cases)} test cases, "
              f"calling the agent {options.concurrency} at a time.")  # fmt: skip
        agent = _agent(options, http)
        answers = await _call_and_post(client, agent, run.run_id, run.test_cases, options)
        if not answers or answers[-1].status == "grading":
            # An empty dataset, or verdicts still coming (a 202): follow the run to its end.
            answers = [await _follow_to_end(client, run.run_id)]
    return _report(options, run.test_cases, answers, time.monotonic() - started)


async def _follow_to_end(client: AgentLassoClient, run_id: str) -> ResultsAnswer:
    """The run's gate once it ends, with every stored result."""
    final = await client.get_run(run_id)
    while final.status not in ("completed", "cancelled", "failed"):
        final = await client.get_run(run_id, wait_s=30)
    results = [result async for result in client.results(run_id)]
    return ResultsAnswer(
        run_id=final.run_id, status=final.status, pass_rate=final.pass_rate,
        pass_threshold=final.pass_threshold, ci_pass=final.ci_pass,
        ci_fail_reason=final.ci_fail_reason, counts=final.counts, results=results,
        judge=final.judge,
    )  # fmt: skip


def _agent(options: CiOptions, http: httpx.AsyncClient) -> AgentCaller:
    if options.agent_cmd is not None:
        return CommandAgent(options.agent_cmd, options.timeout_s)
    assert options.agent_url is not None
    return HttpAgent(http, options.agent_url, options.timeout_s)


async def _call_and_post(
    client: AgentLassoClient,
    agent: AgentCaller,
    run_id: str,
    cases: Sequence[RunTestCase],
    options: CiOptions,
) -> list[ResultsAnswer]:
    """Call the agent for every case, `concurrency` at a time, posting results in batches."""
    limit = asyncio.Semaphore(options.concurrency)

    async def one(case: RunTestCase) -> ResultToPost:
        async with limit:
            try:
                return await agent(run_id, case)
            except Exception as exc:  # one case's failure must not end the whole gate
                return failed(case.test_case_id, f"the agent call failed: {exc!r}")

    answers: list[ResultsAnswer] = []
    batch: list[ResultToPost] = []
    for finished in asyncio.as_completed([one(case) for case in cases]):
        batch.append(await finished)
        if len(batch) >= options.batch_size:
            answers.append(await _post(client, run_id, batch))
            batch = []
    if batch:
        answers.append(await _post(client, run_id, batch))
    return answers


async def _post(client: AgentLassoClient, run_id: str, batch: list[ResultToPost]) -> ResultsAnswer:
    # Posting a batch again replaces its results, so a retry after a dropped answer is safe.
    for attempt in range(1, POST_TRIES + 1):
        try:
            return await client.post_results(run_id, batch)
        except PlatformUnavailable:
            if attempt == POST_TRIES:
                raise
            await asyncio.sleep(attempt)
    raise AssertionError("unreachable")


def _report(
    options: CiOptions, cases: Sequence[RunTestCase], answers: list[ResultsAnswer], time_s: float
) -> int:
    final = answers[-1]
    results = [result for answer in answers for result in answer.results]
    names = {case.test_case_id: case.description for case in cases if case.description}
    _print_results(results, names)
    print(reports.summary_line(final.counts, final.pass_rate, final.pass_threshold))
    if (judge := reports.judge_line(final.judge)) is not None:
        print(judge)
    verdict = "PASS" if final.ci_pass else f"FAIL: {final.ci_fail_reason}"
    print(f"CI gate: {verdict}")
    _write_reports(options, final, results, names, time_s)
    return EXIT_PASS if final.ci_pass else EXIT_FAIL


def _print_results(results: Sequence[CaseResult], names: dict[str, str]) -> None:
    for result in results:
        if not (result.graded and result.pass_fail):
            print("\n".join(reports.case_lines(result, names)))


def _write_reports(
    options: CiOptions,
    final: ResultsAnswer,
    results: Sequence[CaseResult],
    names: dict[str, str],
    time_s: float,
) -> None:
    if options.junit is not None:
        options.junit.write_bytes(reports.junit_xml("agentlasso", results, names, time_s))
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        markdown = reports.step_summary(
            "AgentLasso", final.ci_pass, final.ci_fail_reason, final.counts, final.pass_rate,
            final.pass_threshold, results, names,
        )  # fmt: skip
        reports.append_text(Path(summary_path), markdown)
