"""`agentlasso ci` and the product document's own example client, against a real API process."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentlasso.domain.scopes import Scope
from tests.support.databases import key_of_scope
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CLIENT = Path(__file__).parent / "example_client" / "run-eval.mjs"
REFUND_CHECKS = [
    {"type": "tool_called", "tool": "stripe.refund"},
    {"type": "tool_order", "tools": ["orders.lookup", "stripe.refund"]},
    {"type": "output_contains", "value": "3-5 business days"},
    {"type": "output_not_contains", "value": "guarantee"},
]


def make_dataset(base_url: str, key: str, inputs: list[str], **case: Any) -> str:
    """A dataset with one case per input, all with the refund checks unless told otherwise."""
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}) as client:
        dataset = client.post("/api/v1/datasets", json={"name": "e2e"}).json()
        for text in inputs:
            body = {"input": text, "checks": REFUND_CHECKS, "description": text, **case}
            response = client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=body)
            assert response.status_code == 201, response.text
    return str(dataset["id"])


def run_ci(base_url: str, key: str, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    environment = {
        **os.environ,
        "AGENTLASSO_URL": base_url,
        "AGENTLASSO_API_KEY": key,
        **(env or {}),
    }
    environment.pop("GITHUB_STEP_SUMMARY", None) if "GITHUB_STEP_SUMMARY" not in (
        env or {}
    ) else None
    return subprocess.run(
        [sys.executable, "-m", "agentlasso.cli", "ci", *args],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_passing_gate_exits_0_with_junit_and_step_summary(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer, tmp_path: Path
) -> None:
    dataset = make_dataset(api_process_url, api_key, [f"refund {n}" for n in range(12)])
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    done = run_ci(
        api_process_url, api_key, "--dataset", dataset, "--agent-url", fake_agent.url,
        "--junit", str(junit), "--concurrency", "4", "--batch-size", "5",
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CI gate: PASS" in done.stdout
    assert "Pass rate: 100.0% (threshold 100.0%): 12 passed, 0 failed" in done.stdout
    assert len(fake_agent.requests) == 12
    request = fake_agent.requests[0]
    assert request["source"] == "agentlasso-test" and request["trial"] == 1
    assert {"input", "test_case_id", "run_id", "context"} <= set(request)
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "12" and suite.get("failures") == "0"
    assert len(suite.findall("testcase")) == 12
    text = summary.read_text()
    assert text.startswith("earlier step\n"), "the summary is appended, not overwritten"
    assert "## AgentLasso: passed" in text


async def test_a_ci_key_runs_the_gate(
    api_process_url: str, api_key: str, database_url: str, fake_agent: FakeAgentServer
) -> None:
    dataset = make_dataset(api_process_url, api_key, ["refund 1", "refund 2"])
    ci_key = await key_of_scope(database_url, api_key, Scope.CI)
    done = await asyncio.to_thread(
        run_ci, api_process_url, ci_key, "--dataset", dataset, "--agent-url", fake_agent.url
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CI gate: PASS" in done.stdout
    assert len(fake_agent.requests) == 2


def test_a_failing_gate_exits_1_and_says_why(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer, tmp_path: Path
) -> None:
    dataset = make_dataset(api_process_url, api_key, ["refund ok", "promise things", "crash now"])
    junit = tmp_path / "junit.xml"
    done = run_ci(api_process_url, api_key, "--dataset", dataset, "--agent-url", fake_agent.url,
                  "--junit", str(junit))  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    fail_lines = [line for line in lines if line.startswith("FAIL ")]
    assert len(fail_lines) == 2
    assert any("(promise things)" in line for line in fail_lines)
    assert any("stripe.refund was never called" in line for line in lines)
    assert any('Forbidden "guarantee" found' in line for line in lines)
    assert any("The agent answered HTTP 500." in line for line in lines), done.stdout
    assert "CI gate: FAIL: Pass rate 33.3% is below the threshold 100.0%" in done.stdout
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "2"
    failures = [case.find("failure") for case in suite.findall("testcase")]
    messages = [f.get("message") for f in failures if f is not None]
    assert len(messages) == 2 and all(messages)


def test_threshold_option_lets_a_known_failure_through(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer
) -> None:
    dataset = make_dataset(api_process_url, api_key, ["refund a", "promise b"])
    done = run_ci(api_process_url, api_key, "--dataset", dataset, "--agent-url", fake_agent.url,
                  "--threshold", "0.5")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_unreachable_platform_exits_2(api_key: str, fake_agent: FakeAgentServer) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    done = run_ci(closed, api_key, "--dataset", "x", "--agent-url", fake_agent.url)
    assert done.returncode == 2
    assert "could not be reached" in done.stderr


def test_an_unknown_dataset_exits_2_naming_the_field(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer
) -> None:
    done = run_ci(api_process_url, api_key, "--dataset", "nope", "--agent-url", fake_agent.url)
    assert done.returncode == 2
    assert "/dataset_id" in done.stderr


def test_agent_cmd_gets_the_request_on_stdin(
    api_process_url: str, api_key: str, tmp_path: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, sys\n"
        "request = json.load(sys.stdin)\n"
        "assert request['source'] == 'agentlasso-test'\n"
        "calls = [{'function': {'name': 'orders.lookup', 'arguments': '{}'}},\n"
        "         {'function': {'name': 'stripe.refund', 'arguments': '{}'}}]\n"
        "print(json.dumps({'output': 'Back in 3-5 business days for ' + request['input'],\n"
        "                  'tool_calls': calls}))\n"
    )
    dataset = make_dataset(api_process_url, api_key, ["refund x", "refund y"])
    done = run_ci(api_process_url, api_key, "--dataset", dataset,
                  "--agent-cmd", f"{sys.executable} {script}")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_failing_agent_cmd_is_that_cases_failure(api_process_url: str, api_key: str) -> None:
    dataset = make_dataset(api_process_url, api_key, ["refund x"])
    done = run_ci(api_process_url, api_key, "--dataset", dataset,
                  "--agent-cmd", "echo nope >&2; exit 3")  # fmt: skip
    assert done.returncode == 1
    assert "The agent command exited with 3: nope" in done.stdout


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed on this machine")
def test_the_product_documents_example_client_works_unchanged(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer, tmp_path: Path
) -> None:
    script = tmp_path / "run-eval.mjs"
    original = EXAMPLE_CLIENT.read_text()
    local = original.replace("https://agentlasso.dev/api/v1", f"{api_process_url}/api/v1")
    assert local != original
    script.write_text(local)
    env = {**os.environ, "AGENTLASSO_API_KEY": api_key, "AGENT_ENDPOINT": fake_agent.url}

    passing = make_dataset(api_process_url, api_key, ["refund 1", "refund 2"])
    done = subprocess.run(["node", str(script)], env={**env, "AGENTLASSO_DATASET_ID": passing},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Pass rate: 100.0% (threshold: 100%)")
    assert [line.split()[0] for line in done.stdout.splitlines()[1:]] == ["PASS", "PASS"]

    mixed = make_dataset(api_process_url, api_key, ["refund 1", "promise 2", "silent 3"])
    with httpx.Client(base_url=api_process_url, headers={"x-api-key": api_key}) as client:
        client.post(f"/api/v1/datasets/{mixed}/test-cases", json={"input": "no checks here"})
    done = subprocess.run(["node", str(script)], env={**env, "AGENTLASSO_DATASET_ID": mixed},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    labels = [line.split()[0] for line in done.stdout.splitlines()[1:]]
    assert labels == ["PASS", "FAIL", "FAIL", "SKIP"]
    assert "No checks" in done.stdout.splitlines()[4]
    assert "Pass rate 33.3% is below the threshold 100.0%" in done.stderr


def test_each_call_carries_a_traceparent_whose_trace_id_the_result_keeps(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer
) -> None:
    dataset = make_dataset(api_process_url, api_key, ["refund 1", "refund 2"])

    done = run_ci(api_process_url, api_key, "--dataset", dataset, "--agent-url", fake_agent.url)

    assert done.returncode == 0, done.stdout + done.stderr
    run_id = fake_agent.requests[0]["run_id"]
    sent = {
        request["test_case_id"]: headers["traceparent"].split("-")[1]
        for request, headers in zip(fake_agent.requests, fake_agent.headers_seen, strict=True)
    }
    with httpx.Client(base_url=api_process_url, headers={"x-api-key": api_key}) as client:
        results = client.get(f"/api/v1/eval-runs/{run_id}/results").json()["items"]
    assert {result["test_case_id"]: result["agent_trace_id"] for result in results} == sent
    assert all(len(trace_id) == 32 for trace_id in sent.values())
