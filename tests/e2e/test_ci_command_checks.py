"""`agentlasso ci` and the checks of contract section 17: it posts how long each call to the
agent took (per turn in a conversation), and `--tools FILE` gives the run the agent's tools."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_ci_command import run_ci
from tests.support.conversational_agent import running_conversational_agent
from tests.support.fake_agent import FakeAgentServer

# The fake agent's refund answer calls stripe.refund with {"amount": 20}.
TOOLS = [
    {"name": "orders.lookup", "input_schema": {"type": "object", "required": ["order"]}},
    {
        "type": "function",
        "function": {
            "name": "stripe.refund",
            "parameters": {
                "type": "object",
                "properties": {"amount": {"type": "integer", "maximum": 10}},
            },
        },
    },
]
CHECKS: list[dict[str, Any]] = [
    {"id": "quick", "type": "latency_below", "ms": 100, "severity": "minor"},
    {"id": "in-time", "type": "latency_below", "ms": 60_000},
    {"id": "args", "type": "tool_args_valid"},
]


def dataset_of(base_url: str, key: str, cases: list[dict[str, Any]]) -> str:
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}) as client:
        dataset = client.post("/api/v1/datasets", json={"name": "ci checks"}).json()
        for case in cases:
            response = client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
            assert response.status_code == 201, response.text
    return str(dataset["id"])


def results_of(base_url: str, key: str, stdout: str) -> list[dict[str, Any]]:
    """The stored results of the run `agentlasso ci` said it started."""
    found = re.search(r"^Run ([0-9a-f-]{36}):", stdout, re.MULTILINE)
    assert found, stdout
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}) as client:
        page = client.get(f"/api/v1/eval-runs/{found.group(1)}/results").json()
    items: list[dict[str, Any]] = page["items"]
    return items


def verdicts(result: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["id"]: (c["status"], c["detail"]) for c in result["check_results"]}


def test_ci_posts_each_calls_latency_and_the_tools_it_was_given(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer, tmp_path: Path
) -> None:
    fake_agent.delay_s = 0.3
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    dataset = dataset_of(api_process_url, api_key, [{"input": "refund 1", "checks": CHECKS}])
    done = run_ci(api_process_url, api_key, "--dataset", dataset, "--agent-url", fake_agent.url,
                  "--tools", str(tools))  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    (result,) = results_of(api_process_url, api_key, done.stdout)
    checks = verdicts(result)
    took = re.fullmatch(
        r"The agent answered in ([\d,]+) ms, over the 100 ms allowed\.", checks["quick"][1]
    )
    assert checks["quick"][0] == "failed" and took, checks["quick"]
    assert int(took.group(1).replace(",", "")) >= 300, "the CLI timed the call it made"
    assert checks["in-time"][0] == "passed"
    assert checks["args"] == (
        "failed",
        "stripe.refund was called with arguments that are not valid: "
        "$.amount: 20 is greater than the maximum 10.",
    )
    assert "stripe.refund was called with arguments that are not valid" in done.stdout


def test_without_tools_the_arguments_are_not_graded(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer
) -> None:
    cases = [{"input": "refund 1", "checks": [CHECKS[1], {**CHECKS[2], "severity": "minor"}]}]
    dataset = dataset_of(api_process_url, api_key, cases)
    done = run_ci(api_process_url, api_key, "--dataset", dataset, "--agent-url", fake_agent.url)
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = results_of(api_process_url, api_key, done.stdout)
    status = {check: status for check, (status, _) in verdicts(result).items()}
    assert status == {"in-time": "passed", "args": "not_graded"}


def test_ci_posts_each_turns_latency(api_process_url: str, api_key: str) -> None:
    conversation = {
        "turns": [
            {"user": "Hi, my order 1234 has not arrived."},
            {"user": "Can I get a refund?",
             "checks": [{"id": "turn", "type": "latency_below", "ms": 60_000}]},
        ]
    }  # fmt: skip
    checks = [{"id": "all", "type": "latency_below", "ms": 300, "total": True}]
    dataset = dataset_of(
        api_process_url, api_key, [{"conversation": conversation, "checks": checks}]
    )
    with running_conversational_agent() as agent:
        agent.delay_s = 0.2
        done = run_ci(api_process_url, api_key, "--dataset", dataset, "--agent-url", agent.url)
    assert done.returncode == 1, done.stdout + done.stderr
    (result,) = results_of(api_process_url, api_key, done.stdout)
    took = [turn["latency_ms"] for turn in result["turns"]]
    assert all(ms >= 200 for ms in took), took
    assert verdicts(result) == {
        "turn": ("passed", f"The agent answered in {took[1]:,} ms, within the 60,000 ms allowed."),
        "all": ("failed", f"The 2 turns took {sum(took):,} ms in all, over the 300 ms allowed."),
    }


def test_a_tools_file_that_is_not_a_list_of_tools_exits_2(
    api_process_url: str, api_key: str, fake_agent: FakeAgentServer, tmp_path: Path
) -> None:
    for text, words in (("{not json", "is not JSON"), ('{"name": "t"}', "a JSON list")):
        tools = tmp_path / "tools.json"
        tools.write_text(text)
        done = run_ci(api_process_url, api_key, "--dataset", "x", "--agent-url", fake_agent.url,
                      "--tools", str(tools))  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        assert "--tools" in done.stderr and words in done.stderr, done.stderr
    missing = tmp_path / "nowhere.json"
    done = run_ci(api_process_url, api_key, "--dataset", "x", "--agent-url", fake_agent.url,
                  "--tools", str(missing))  # fmt: skip
    assert done.returncode == 2 and "cannot read" in done.stderr, done.stderr
    assert fake_agent.requests == [], "nothing ran"
