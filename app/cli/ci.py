"""`agentlasso ci`: the CI gate where the CI job calls its own agent and posts what it did."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import msgspec

from agentlasso.agent_wire.calls import AgentTarget
from agentlasso.cli.compare_report import (
    CaseText,
    fetch_compared,
    gate_line,
    report_compared,
    selection_line,
)
from agentlasso.cli.conversations import play_conversation_case
from agentlasso.cli.errors import run_reporting_errors
from agentlasso.cli.gate_report import GateReport, finish, print_run_page
from agentlasso.cli.local_agents import AgentCaller, CommandAgent, HttpAgent, call_once, failed
from agentlasso.cli.protocol_agents import ProtocolAgent
from agentlasso.client import (
    AgentLassoClient,
    GradedResult,
    NextUserTurn,
    PlatformUnavailable,
    ResultsAnswer,
    ResultToPost,
    RunTestCase,
    with_results,
)
from agentlasso.domain.conversations import Conversation, first_message

POST_TRIES = 3
Sleep = Callable[[float], Awaitable[None]]


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
    # Only the cases with one of these tags (none: every case); the version to run.
    tags: tuple[str, ...] = ()
    dataset_version: str | None = None
    gate: str = "threshold"
    # None: the server picks the baseline.
    baseline_run_id: str | None = None
    comment_file: Path | None = None
    # The agent's declared tools (their input schemas check tool_args_valid); None: not sent.
    tools: list[dict[str, Any]] | None = None
    # How --agent-url is spoken to (contract section 14), and the model an openai_chat
    # endpoint is asked for.
    agent_protocol: str = "agentlasso"
    agent_model: str | None = None


def run_ci(options: CiOptions) -> int:
    """Run the gate; the exit code is 0 (pass), 1 (fail) or 2 (platform unreachable)."""
    return run_reporting_errors(options.base_url, _run(options))


async def _run(options: CiOptions) -> int:
    started = time.monotonic()
    async with (
        AgentLassoClient(options.base_url, options.api_key) as client,
        httpx.AsyncClient(limits=httpx.Limits(max_connections=options.concurrency)) as http,
    ):
        run = await client.create_run(
            options.dataset_id, pass_threshold=options.threshold, gate=options.gate,
            baseline_run_id=options.baseline_run_id, tags=list(options.tags) or None,
            dataset_version=options.dataset_version, tools=options.tools,
        )  # fmt: skip
        print(f"Run {run.run_id}: {len(run.test_cases)} test cases, "
              f"calling the agent {options.concurrency} at a time.")  # fmt: skip
        print_run_page(run.web_url)
        print(gate_line(run.gate, run.pass_threshold, run.baseline_run_id))
        if chosen := selection_line(run.tags, run.dataset_version):
            print(chosen)
        agent = _agent(options, http)
        answers = await _call_and_post(client, agent, run.run_id, run.test_cases, options)
        if not answers or answers[-1].status == "grading":
            # An empty dataset, or verdicts still coming (a 202): follow the run to its end.
            answers = [await _follow_to_end(client, run.run_id)]
        for_comment = options.comment_file is not None
        compared = await fetch_compared(client, answers[-1], for_comment=for_comment)
    texts = {
        case.test_case_id: CaseText.of(
            case.description, first_message(case.input, _conversation(case))
        )
        for case in run.test_cases
    }
    names = {case.test_case_id: case.description for case in run.test_cases if case.description}
    report = GateReport(
        gate=answers[-1],
        results=[result for answer in answers for result in answer.results],
        names=names,
        time_s=time.monotonic() - started,
    )
    report_compared(report, compared, texts, options.comment_file)
    return finish(report, options.junit)


def _conversation(case: RunTestCase) -> Conversation | None:
    return case.conversation if isinstance(case.conversation, Conversation) else None


async def play_case(
    client: AgentLassoClient, agent: AgentCaller, run_id: str, case: RunTestCase
) -> ResultToPost:
    """Run the agent on one case: one call, or a conversation's turns."""
    if case.conversation is msgspec.UNSET:
        return await call_once(agent, run_id, case)

    async def ask_user(transcript: list[dict[str, Any]]) -> NextUserTurn:
        return await client.next_user_turn(run_id, case.test_case_id, 1, transcript)

    return await play_conversation_case(agent, run_id, case, ask_user)


async def _follow_to_end(client: AgentLassoClient, run_id: str) -> ResultsAnswer:
    """The run's gate once it ends, with every stored result."""
    final = await client.get_run(run_id)
    while final.status not in ("completed", "cancelled", "failed"):
        final = await client.get_run(run_id, wait_s=30)
    results: list[GradedResult] = [result async for result in client.results(run_id)]
    return with_results(final, results)


def _agent(options: CiOptions, http: httpx.AsyncClient) -> AgentCaller:
    if options.agent_cmd is not None:
        return CommandAgent(options.agent_cmd, options.timeout_s)
    assert options.agent_url is not None
    if options.agent_protocol != "agentlasso":
        target = AgentTarget(
            options.agent_url, {}, options.timeout_s, protocol=options.agent_protocol,
            model=options.agent_model, tools=tuple(options.tools or ()),
        )  # fmt: skip
        return ProtocolAgent(http, target)
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
                return await play_case(client, agent, run_id, case)
            except Exception as exc:  # one case's failure must not end the whole gate
                return failed(case.test_case_id, f"the agent call failed: {exc!r}")

    answers: list[ResultsAnswer] = []
    batch: list[ResultToPost] = []
    for finished in asyncio.as_completed([one(case) for case in cases]):
        batch.append(await finished)
        if len(batch) >= options.batch_size:
            answers.append(await post_batch(client, run_id, batch))
            batch = []
    if batch:
        answers.append(await post_batch(client, run_id, batch))
    return answers


async def post_batch(
    client: AgentLassoClient, run_id: str, batch: list[ResultToPost], sleep: Sleep = asyncio.sleep
) -> ResultsAnswer:
    """Post a batch, trying again (after 1 s, then 2 s) when the platform did not answer."""
    # Posting a batch again replaces its results, so a retry after a dropped answer is safe.
    for attempt in range(1, POST_TRIES + 1):
        try:
            return await client.post_results(run_id, batch)
        except PlatformUnavailable:
            if attempt == POST_TRIES:
                raise
            await sleep(attempt)
    raise AssertionError("unreachable")
