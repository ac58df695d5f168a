"""Everything else keeps working for conversations (contract section 13, "Comparing ... `Re-run
failed`, trials, pass^k and flaky apply unchanged"): comparisons and the no-new-failures gate,
JUnit and the pull-request comment naming the failing turn, trials and pass^k, the flaky cases,
and Re-run failed, against `agentlasso api` as its own process, real workers and a
conversational agent that keeps its state by conversation_id."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_ci_command import run_ci
from tests.e2e.test_conversations_server import ENDING_CASE, ENDING_CHECKS, ORDER_CASE, add_case
from tests.e2e.test_web_run_flows import press
from tests.integration.test_web_run_filters import listed_inputs
from tests.support.api import all_results, create_dataset, register_agent, start_run, wait_final
from tests.support.ci_conversation_agent import serving
from tests.support.conversational_agent import ConversationalAgent, running_conversational_agent
from tests.support.processes import WorkerProcesses
from tests.support.web import shown_text

FIRST_MESSAGE = ORDER_CASE["turns"][0]["user"]


class FlakyAgent(ConversationalAgent):
    """The conversational agent, forgetting the order number at turn 3 of a second trial only."""

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        reply = super().answer(request)
        if request.get("trial") == 2 and request.get("turn") == 3:
            return {**reply, "output": "Your order number? I do not remember it, sorry."}
        return reply


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    """The API and web app as `agentlasso api` serves them, in a process of its own."""
    return api_process_url


@pytest.fixture
def agent() -> Iterator[ConversationalAgent]:
    with running_conversational_agent() as server:
        yield server


@pytest.fixture
def flaky_agent() -> Iterator[FlakyAgent]:
    server = FlakyAgent()
    with serving(server):
        yield server


async def ci(base_url: str, api_key: str, *args: str) -> Any:
    """`agentlasso ci` in a thread of its own (the test's client stays free); its outcome."""
    return await asyncio.to_thread(run_ci, base_url, api_key, *args)


def run_id_of(stdout: str) -> str:
    return stdout.split()[1].rstrip(":")


async def test_a_conversation_that_now_fails_is_a_new_failure_named_by_its_turn(
    client: httpx.AsyncClient, web: httpx.AsyncClient, base_url: str, api_key: str,
    agent: ConversationalAgent, tmp_path: Path,
) -> None:  # fmt: skip
    dataset = await create_dataset(client, name="Order conversations")
    order_case = await add_case(client, dataset["id"], conversation=ORDER_CASE)
    await add_case(client, dataset["id"], conversation=ENDING_CASE, checks=ENDING_CHECKS)
    cli = ("--dataset", dataset["id"], "--agent-url", agent.url, "--gate", "no_new_failures")
    baseline = await ci(base_url, api_key, *cli)
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr

    agent.forget_at_turn_3 = True
    junit, comment = tmp_path / "junit.xml", tmp_path / "comment.md"
    failing = await ci(base_url, api_key, *cli, "--junit", str(junit),
                       "--comment-file", str(comment))  # fmt: skip
    assert failing.returncode == 1, failing.stdout + failing.stderr
    run_id = run_id_of(failing.stdout)
    assert "CI gate: FAIL: 1 case that passed in the baseline run no longer passes" in (
        failing.stdout
    )
    # The new failure is named by its first user message, and its failing turn.
    new_fail = f"NEW FAIL {order_case} ({FIRST_MESSAGE}): 2/3 checks passed"
    assert new_fail in failing.stdout and "turn 3: c3 output_contains" in failing.stdout

    compared = (await client.get(f"/api/v1/eval-runs/{run_id}/compare")).json()
    assert compared["baseline_run_id"] == run_id_of(baseline.stdout)
    assert compared["counts"]["new_failure"] == 1 and compared["counts"]["still_passing"] == 1
    (item,) = [i for i in compared["items"] if i["bucket"] == "new_failure"]
    assert item["test_case_id"] == order_case and item["changed_checks"] == ["c3"]
    assert item["baseline"]["pass_fail"] is True and item["current"]["pass_fail"] is False
    run = (await client.get(f"/api/v1/eval-runs/{run_id}")).json()
    assert run["ci_pass"] is False and "no longer passes" in run["ci_fail_reason"]

    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    failures = [case.find("failure") for case in suite.findall("testcase")]
    (failure,) = [f for f in failures if f is not None]
    assert "turn 3: c3 output_contains" in (failure.get("message") or "")
    text = comment.read_text()
    assert "### New failures (1)" in text and FIRST_MESSAGE in text
    assert "turn 3: Output must contain" in text and "check `c3`" in text

    # Fixed again: the verdict flipped twice with neither the case nor the agent changed.
    agent.forget_at_turn_3 = False
    fixed = await ci(base_url, api_key, *cli)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    flaky = (await client.get(f"/api/v1/datasets/{dataset['id']}/flaky")).json()["items"]
    assert [(i["test_case_id"], i["input"], i["runs"], i["flips"]) for i in flaky] == [
        (order_case, FIRST_MESSAGE, 3, 2)
    ]
    page = shown_text((await web.get(f"/datasets/{dataset['id']}/flaky")).text)
    assert FIRST_MESSAGE in page


async def test_trials_of_a_conversation_that_disagree_are_flaky_and_re_run_failed_plays_it(
    client: httpx.AsyncClient, web: httpx.AsyncClient, flaky_agent: FlakyAgent,
    workers: WorkerProcesses,
) -> None:  # fmt: skip
    workers.start()
    dataset = await create_dataset(client, name="Flaky conversations")
    order_case = await add_case(client, dataset["id"], conversation=ORDER_CASE)
    ending_case = await add_case(
        client, dataset["id"], conversation=ENDING_CASE, checks=ENDING_CHECKS
    )
    agent_id = await register_agent(client, flaky_agent.url, name="flaky bot")
    first = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id, trials=2)
    final = await wait_final(client, first["run_id"])
    assert final["status"] == "completed", final
    assert final["flaky_count"] == 1 and final["pass_rate"] == pytest.approx(0.5)
    assert final["pass_at_k_rate"] == pytest.approx(1.0)
    assert final["pass_all_k_rate"] == pytest.approx(0.5)
    results = await all_results(client, first["run_id"])
    ordered = {r["trial"]: r for r in results if r["test_case_id"] == order_case}
    assert ordered[1]["pass_fail"] is True and ordered[2]["pass_fail"] is False
    for result in ordered.values():
        assert (result["pass_at_k"], result["pass_all_k"], result["flaky"]) == (True, False, True)
    assert "turn 3: c3 output_contains" in ordered[2]["judge_reasoning"]
    ending = [r for r in results if r["test_case_id"] == ending_case]
    assert all(r["pass_all_k"] is True and r["flaky"] is False for r in ending)
    page = (await web.get(f"/runs/{first['run_id']}")).text
    assert listed_inputs(page) == [FIRST_MESSAGE], "the failed trial, by its first user message"

    rerun = await press(web, first["run_id"], "Re-run failed")
    again = await wait_final(client, rerun)
    assert again["counts"]["total"] == 2, "the failed conversation, in each of its two trials"
    played = [r for r in flaky_agent.requests if r["run_id"] == rerun]
    assert {r["test_case_id"] for r in played} == {order_case}
    by_conversation: dict[str, list[int]] = {}
    for request in played:
        by_conversation.setdefault(request["conversation_id"], []).append(request["turn"])
    assert sorted(by_conversation.values()) == [[1, 2, 3], [1, 2, 3]]
    assert [r["input"] for r in played if r["turn"] == 1] == [FIRST_MESSAGE] * 2
    replayed = await all_results(client, rerun)
    assert all(len(r["turns"]) == 3 and r["ended_by"] == "script" for r in replayed)
    assert again["flaky_count"] == 1

    flaky = (await client.get(f"/api/v1/datasets/{dataset['id']}/flaky")).json()["items"]
    assert [(i["test_case_id"], i["input"], i["runs"], i["flips"]) for i in flaky] == [
        (order_case, FIRST_MESSAGE, 2, 2)
    ]
    shown = shown_text((await web.get(f"/datasets/{dataset['id']}/flaky")).text)
    assert FIRST_MESSAGE in shown
