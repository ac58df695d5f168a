"""`agentlasso ci` playing conversation cases (contract section 13) against a real API process
and a conversational agent that keeps its state by conversation_id."""

from __future__ import annotations

import sys
import uuid
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_ci_command import ROOT, run_ci
from tests.support.ci_conversation_agent import (
    ConversationAgent,
    running_conversation_agent,
    running_fake_user_platform,
)


def refund_conversation(order: str) -> dict[str, Any]:
    return {
        "description": f"refund of {order}",
        "conversation": {
            "turns": [
                {
                    "user": "I want a refund",
                    "checks": [{"type": "output_contains", "value": "order number"}],
                },
                {
                    "user": f"It is {order}",
                    "checks": [{"type": "tool_called", "tool": "orders.lookup"}],
                },
                {
                    "user": "Yes, refund it",
                    "checks": [{"type": "tool_called", "tool": "stripe.refund"}],
                },
            ]
        },
        "checks": [{"type": "tool_not_called", "tool": "orders.cancel"}],
    }


GOODBYE = {
    "description": "the agent ends it",
    "conversation": {"turns": [{"user": "bye now"}, {"user": "are you still there?"}]},
    "checks": [{"type": "output_contains", "value": "Goodbye"}],
}


@pytest.fixture
def agent() -> Iterator[ConversationAgent]:
    with running_conversation_agent() as server:
        yield server


def dataset_of(base_url: str, key: str, cases: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """A dataset of these cases: its id and the cases' ids."""
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}) as client:
        dataset = client.post("/api/v1/datasets", json={"name": "conversations"}).json()
        ids = []
        for case in cases:
            response = client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])
    return str(dataset["id"]), ids


def stored_results(base_url: str, key: str, stdout: str) -> dict[str, dict[str, Any]]:
    run_id = stdout.split()[1].rstrip(":")
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}) as client:
        page = client.get(f"/api/v1/eval-runs/{run_id}/results").json()
    return {item["test_case_id"]: item for item in page["items"]}


def test_scripted_conversations_are_played_turn_by_turn_and_fail_naming_the_turn(
    api_process_url: str, api_key: str, agent: ConversationAgent, tmp_path: Path
) -> None:
    cases = [refund_conversation("A-17"), refund_conversation("B-9"), GOODBYE]
    dataset, (good, buggy, goodbye) = dataset_of(api_process_url, api_key, cases)
    junit = tmp_path / "junit.xml"
    done = run_ci(api_process_url, api_key, "--dataset", dataset, "--agent-url", agent.url,
                  "--junit", str(junit))  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    fail_lines = [line for line in done.stdout.splitlines() if line.startswith("FAIL ")]
    assert len(fail_lines) == 1 and "(refund of B-9)" in fail_lines[0], done.stdout
    assert "turn 3: c3 tool_called" in fail_lines[0]
    assert "    turn 3: c3 tool_called (critical, failed): " in done.stdout
    assert "stripe.refund was never called" in done.stdout

    by_case: dict[str, list[dict[str, Any]]] = {}
    for request in agent.requests:
        by_case.setdefault(request["test_case_id"], []).append(request)
    refund = sorted(by_case[good], key=lambda r: r["turn"])
    assert [r["turn"] for r in refund] == [1, 2, 3]
    assert [r["input"] for r in refund] == ["I want a refund", "It is A-17", "Yes, refund it"]
    assert [len(r["messages"]) for r in refund] == [0, 2, 4]
    # A reply's calls go with it in the history, when it made any.
    assert refund[2]["messages"][1] == {
        "role": "assistant", "content": "Sure: what is your order number?",
    }  # fmt: skip
    assert refund[2]["messages"][3]["tool_calls"][0]["name"] == "orders.lookup"
    assert refund[2]["messages"][2] == {"role": "user", "content": "It is A-17"}
    conversation_ids = {r["conversation_id"] for r in refund}
    assert len(conversation_ids) == 1
    uuid.UUID(conversation_ids.pop())
    assert by_case[buggy][0]["conversation_id"] != refund[0]["conversation_id"]
    # The agent answered `"end": true` at turn 1: turn 2 was never sent.
    assert [r["turn"] for r in by_case[goodbye]] == [1]

    stored = stored_results(api_process_url, api_key, done.stdout)
    assert stored[good]["pass_fail"] is True and stored[good]["ended_by"] == "script"
    assert [t["actual_output"] for t in stored[good]["turns"]][-1].startswith("Refunded A-17")
    assert stored[goodbye]["ended_by"] == "agent" and len(stored[goodbye]["turns"]) == 1
    assert stored[goodbye]["pass_fail"] is True
    assert stored[buggy]["pass_fail"] is False

    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    failures = [case.find("failure") for case in suite.findall("testcase")]
    failure = next(f for f in failures if f is not None)
    assert "turn 3: c3 tool_called" in (failure.get("message") or "")
    assert "turn 3: c3 tool_called (critical, failed)" in (failure.text or "")


def test_each_turns_call_carries_a_traceparent_whose_trace_id_the_turn_keeps(
    api_process_url: str, api_key: str, agent: ConversationAgent
) -> None:
    dataset, (case_id,) = dataset_of(api_process_url, api_key, [refund_conversation("A-17")])

    done = run_ci(api_process_url, api_key, "--dataset", dataset, "--agent-url", agent.url)

    assert done.returncode == 0, done.stdout + done.stderr
    sent = {
        request["turn"]: str(traceparent).split("-")[1]
        for request, traceparent in zip(agent.requests, agent.traceparents, strict=True)
    }
    turns = stored_results(api_process_url, api_key, done.stdout)[case_id]["turns"]
    assert {turn["turn"]: turn["agent_trace_id"] for turn in turns} == sent
    assert len(set(sent.values())) == 3, "a new trace for each turn's call"


def test_an_agent_command_plays_a_conversation_from_its_messages(
    api_process_url: str, api_key: str, tmp_path: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.support.ci_conversation_agent import ORDER, agent_answer\n"
        "request = json.load(sys.stdin)\n"
        "state = {}\n"
        "for message in request['messages']:\n"
        "    found = ORDER.search(str(message['content']))\n"
        "    if message['role'] == 'user' and found:\n"
        "        state['order'] = found.group()\n"
        "print(json.dumps(agent_answer(state, request)))\n"
    )
    dataset, (good,) = dataset_of(api_process_url, api_key, [refund_conversation("A-17")])
    done = run_ci(api_process_url, api_key, "--dataset", dataset,
                  "--agent-cmd", f"{sys.executable} {script}")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    stored = stored_results(api_process_url, api_key, done.stdout)[good]
    assert [t["turn"] for t in stored["turns"]] == [1, 2, 3]
    assert all(t["latency_ms"] is not None for t in stored["turns"])


def test_a_simulated_user_plays_on_after_the_script(
    api_process_url: str, api_key: str, agent: ConversationAgent
) -> None:
    case = {
        "description": "simulated refund",
        "conversation": {
            "turns": [{"user": "I want a refund"}],
            "simulated_user": {"persona": "a customer", "goal": "a refund of A-17", "max_turns": 4},
        },
        "checks": [{"type": "tool_called", "tool": "stripe.refund"}],
    }
    dataset, (case_id,) = dataset_of(api_process_url, api_key, [case])
    with running_fake_user_platform(api_process_url) as platform:
        done = run_ci(platform.url, api_key, "--dataset", dataset, "--agent-url", agent.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [len(asked["transcript"]) for asked in platform.asked] == [2, 4, 6]
    assert all(a["test_case_id"] == case_id and a["trial"] == 1 for a in platform.asked)
    assert platform.asked[0]["transcript"][0] == {"role": "user", "content": "I want a refund"}
    stored = stored_results(api_process_url, api_key, done.stdout)[case_id]
    assert [(t["user"], t["simulated"]) for t in stored["turns"]] == [
        ("I want a refund", False), ("It is A-17", True), ("Yes, refund it", True),
    ]  # fmt: skip
    assert stored["ended_by"] == "simulated_user" and stored["pass_fail"] is True


def test_a_simulated_user_that_cannot_be_asked_leaves_its_checks_not_graded_and_fails(
    api_process_url: str, api_key: str, agent: ConversationAgent
) -> None:
    case = {
        "conversation": {
            "turns": [{"user": "I want a refund"}],
            "simulated_user": {"persona": "a customer", "goal": "a refund of A-17"},
        },
        "checks": [{"type": "tool_called", "tool": "stripe.refund"}],
    }
    dataset, (case_id,) = dataset_of(api_process_url, api_key, [case])
    with running_fake_user_platform(api_process_url) as platform:
        platform.failing = True
        done = run_ci(platform.url, api_key, "--dataset", dataset, "--agent-url", agent.url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(platform.asked) == 1
    stored = stored_results(api_process_url, api_key, done.stdout)[case_id]
    assert stored["outcome"] == "failed" and stored["pass_fail"] is False
    assert {c["status"] for c in stored["check_results"]} == {"not_graded"}
    assert "simulated user could not be asked" in stored["judge_reasoning"]
    assert [t["turn"] for t in stored["turns"]] == [1]


def test_the_simulated_user_is_asked_again_after_a_429_and_a_503_with_retry_after(
    api_process_url: str, api_key: str, agent: ConversationAgent
) -> None:
    case = {
        "conversation": {
            "turns": [{"user": "I want a refund"}],
            "simulated_user": {"persona": "a customer", "goal": "a refund of A-17"},
        },
        "checks": [{"type": "tool_called", "tool": "stripe.refund"}],
    }
    dataset, (case_id,) = dataset_of(api_process_url, api_key, [case])
    with running_fake_user_platform(api_process_url) as platform:
        # The project's quota of simulated turns, then the model, each asking for a second.
        platform.refusals = [(429, "1"), (503, "1")]
        done = run_ci(platform.url, api_key, "--dataset", dataset, "--agent-url", agent.url)
    assert done.returncode == 0, done.stdout + done.stderr
    # The first message was asked three times, each after the wait asked for; then on.
    assert [len(asked["transcript"]) for asked in platform.asked] == [2, 2, 2, 4, 6]
    first, second, third = platform.asked_at[:3]
    assert second - first >= 0.9 and third - second >= 0.9, platform.asked_at
    stored = stored_results(api_process_url, api_key, done.stdout)[case_id]
    assert [t["user"] for t in stored["turns"]] == [
        "I want a refund",
        "It is A-17",
        "Yes, refund it",
    ]
    assert stored["ended_by"] == "simulated_user" and stored["pass_fail"] is True


def test_a_retry_after_past_the_wait_allowed_leaves_the_case_not_graded_at_once(
    api_process_url: str, api_key: str, agent: ConversationAgent
) -> None:
    case = {
        "conversation": {
            "turns": [{"user": "I want a refund"}],
            "simulated_user": {"persona": "a customer", "goal": "a refund of A-17"},
        },
        "checks": [{"type": "tool_called", "tool": "stripe.refund"}],
    }
    dataset, (case_id,) = dataset_of(api_process_url, api_key, [case])
    with running_fake_user_platform(api_process_url) as platform:
        # As the server's daily budget for the project, spent until the next UTC day.
        platform.refusals = [(503, "36000")]
        done = run_ci(platform.url, api_key, "--dataset", dataset, "--agent-url", agent.url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(platform.asked) == 1
    stored = stored_results(api_process_url, api_key, done.stdout)[case_id]
    # Its critical check could not be graded: that fails the case (section 4's rule).
    assert stored["outcome"] == "failed"
    assert {c["status"] for c in stored["check_results"]} == {"not_graded"}
    assert "simulated user could not be asked" in stored["judge_reasoning"]
