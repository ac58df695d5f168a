"""`agentlasso run --wait`: a server-mode run from the command line, with its exit codes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import httpx

from agentlasso.domain.scopes import Scope
from tests.support.api import dataset_of, register_agent
from tests.support.databases import key_of_scope
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import ROOT, WorkerProcesses, free_port


async def agentlasso_run(
    base_url: str, key: str, *args: str, summary: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTLASSO_URL": base_url, "AGENTLASSO_API_KEY": key}
    env.pop("GITHUB_STEP_SUMMARY", None)
    if summary is not None:
        env["GITHUB_STEP_SUMMARY"] = str(summary)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentlasso.cli", "run", *args, cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return subprocess.CompletedProcess(args, process.returncode, out.decode(), err.decode())


async def test_run_wait_exits_0_when_the_gate_passes(
    client: httpx.AsyncClient,
    base_url: str,
    api_key: str,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    tmp_path: Path,
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(25)])
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    done = await agentlasso_run(
        base_url, api_key, "--dataset", dataset_id, "--agent", agent_id, "--wait",
        "--trials", "2", "--junit", str(junit), summary=summary,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "50/50 done, 50 passed, 0 failed" in done.stdout
    assert "CI gate: PASS" in done.stdout
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "50" and suite.get("failures") == "0"
    assert "## AgentLasso: passed" in summary.read_text()


async def test_a_ci_key_starts_and_waits_for_a_server_run(
    client: httpx.AsyncClient,
    base_url: str,
    api_key: str,
    database_url: str,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund 1", "refund 2"])
    ci_key = await key_of_scope(database_url, api_key, Scope.CI)
    done = await agentlasso_run(
        base_url, ci_key, "--dataset", dataset_id, "--agent", agent_id, "--wait"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2/2 done, 2 passed, 0 failed" in done.stdout


async def test_run_wait_exits_1_and_prints_the_failures(
    client: httpx.AsyncClient,
    base_url: str,
    api_key: str,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund 1", "promise 2", "refund 3"])
    done = await agentlasso_run(
        base_url, api_key, "--dataset", dataset_id, "--agent", agent_id, "--wait"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "stripe.refund was never called" in done.stdout
    assert "CI gate: FAIL: Pass rate 66.7% is below the threshold 100.0%" in done.stdout
    passing = await agentlasso_run(
        base_url, api_key, "--dataset", dataset_id, "--agent", agent_id, "--wait",
        "--threshold", "0.6",
    )  # fmt: skip
    assert passing.returncode == 0, passing.stdout


async def test_run_exits_2_when_the_platform_is_unreachable_or_refuses(
    client: httpx.AsyncClient, base_url: str, api_key: str
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    down = await agentlasso_run(closed, api_key, "--dataset", "x", "--agent", "y", "--wait")
    assert down.returncode == 2 and "could not be reached" in down.stderr
    dataset_id = await dataset_of(client, ["refund"])
    unknown = await agentlasso_run(
        base_url, api_key, "--dataset", dataset_id, "--agent", "nope", "--wait"
    )
    assert unknown.returncode == 2 and "/agent_id" in unknown.stderr
