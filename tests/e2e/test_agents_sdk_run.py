"""A real agent framework under test in server mode: the OpenAI Agents SDK agent
(tests/support/agents_sdk_agent.py) plays a three-turn conversation case, twice, with real
worker processes (contract section 13)."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.e2e.test_conversations_server import add_case
from tests.support.agents_sdk_agent import running_sdk_agent
from tests.support.api import all_results, create_dataset, register_agent, start_run, wait_final
from tests.support.processes import WorkerProcesses

OPENING = "Hi, where is my order 4417?"
THANKS = "Great, thank you."
RECALL = "What was my order number again?"
CASE = {
    "conversation": {"turns": [
        {"user": OPENING, "checks": [
            {"id": "looked_up", "type": "tool_called", "tool": "lookup_order"}]},
        {"user": THANKS},
        {"user": RECALL, "checks": [
            {"id": "remembers", "type": "output_contains", "value": "4417"}]},
    ]},
    "checks": [{"id": "not_lost", "type": "output_not_contains", "value": "don't know"}],
}  # fmt: skip


async def test_an_agents_sdk_agent_passes_a_conversation_each_trial_in_a_fresh_session(
    client: httpx.AsyncClient, workers: WorkerProcesses, tmp_path: Path
) -> None:
    workers.start()
    async with running_sdk_agent(tmp_path) as (url, agent, model):
        agent_id = await register_agent(client, url)
        dataset = await create_dataset(client)
        case_id = await add_case(client, dataset["id"], **CASE)
        run = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id, trials=2)
        final = await wait_final(client, run["run_id"], wait_s=90)
        results = await all_results(client, run["run_id"])
        sessions = {
            conversation_id: await session.get_items()
            for conversation_id, session in agent.sessions.items()
        }
    assert final["status"] == "completed" and final["ci_pass"] is True, final
    assert final["counts"]["done"] == 2 and final["counts"]["passed"] == 2, results
    for result in sorted(results, key=lambda r: r["trial"]):
        assert result["test_case_id"] == case_id and result["outcome"] == "passed", result
        assert [(c["id"], c.get("turn"), c["status"]) for c in result["check_results"]] == [
            ("looked_up", 1, "passed"), ("remembers", 3, "passed"), ("not_lost", None, "passed"),
        ]  # fmt: skip
        assert result["ended_by"] == "script"
        assert [t["user"] for t in result["turns"]] == [OPENING, THANKS, RECALL]
        assert result["turns"][0]["actual_tool_calls"][0]["arguments"] == {"order_id": "4417"}
        assert result["actual_output"] == "Your order number is 4417."

    # Each trial is its own conversation: a new id, so a fresh SDK session holding only its
    # own three user messages.
    assert len(sessions) == 2
    for items in sessions.values():
        said = [item.get("content") for item in items if item.get("role") == "user"]
        assert said == [OPENING, THANKS, RECALL]
    # The model's first call of each trial was sent no earlier conversation.
    openings = [r for r in model.requests if r["messages"][-1].get("content") == OPENING]
    assert len(openings) == 2
    for request in openings:
        sent = [m.get("content") for m in request["messages"]]
        assert RECALL not in sent and sent.count(OPENING) == 1
