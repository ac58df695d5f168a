"""A conversation case on a run's page and on its dataset's flaky page (contract section 13): it
has no input, so it is shown by its first user message (a scripted turn's, or the simulated
user's opening) and found by its user messages, against a real `agentlasso api` process."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.test_web_run_filters import listed_inputs
from tests.support.api import create_dataset, start_run
from tests.support.web import shown_text

FIRST = "My parcel 4417 never came, can you help?"
SECOND = "Then refund the kettle, please."
OPENING = "Hi, I want to cancel my subscription."
SCRIPTED = {
    "conversation": {"turns": [{"user": FIRST}, {"user": SECOND}]},
    "checks": [{"type": "tool_called", "tool": "stripe.refund"}],
}
OPENED = {
    "conversation": {
        "turns": [],
        "simulated_user": {"persona": "terse", "goal": "cancel it", "opening": OPENING},
    },
    "checks": [{"type": "output_contains", "value": "cancelled"}],
}
REFUND = [{"name": "stripe.refund", "arguments": {"order": 4417}}]


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    """The web app as `agentlasso api` serves it, in a process of its own."""
    return api_process_url


async def add_cases(client: httpx.AsyncClient, dataset_id: str, *cases: dict[str, Any]) -> None:
    for case in cases:
        answer = await client.post(f"/api/v1/datasets/{dataset_id}/test-cases", json=case)
        assert answer.status_code == 201, answer.text


async def ci_run(client: httpx.AsyncClient, dataset_id: str, *, refunds: bool) -> str:
    """A finished CI-mode run of the dataset: the scripted conversation refunds or not, the
    opened one is cancelled. Its id."""
    run = await start_run(client, dataset_id=dataset_id)
    results = []
    for case in run["test_cases"]:
        if case["conversation"].get("turns"):
            second = {"actual_output": "Done.", "actual_tool_calls": REFUND if refunds else []}
            turns = [{"actual_output": "Found 4417.", "actual_tool_calls": []}, second]
            results.append({"test_case_id": case["test_case_id"], "turns": turns})
        else:
            turns = [
                {"user": OPENING, "actual_output": "It is cancelled.", "actual_tool_calls": []}
            ]
            results.append(
                {"test_case_id": case["test_case_id"], "turns": turns, "ended_by": "simulated_user"}
            )
    posted = await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
    )
    assert posted.status_code == 200, posted.text
    return str(run["run_id"])


async def test_a_run_page_shows_and_finds_a_conversation_by_its_user_messages(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client, name="Conversations")
    await add_cases(client, dataset["id"], SCRIPTED, OPENED)
    run_id = await ci_run(client, dataset["id"], refunds=False)
    page = (await web.get(f"/runs/{run_id}", params={"outcome": ""})).text
    assert listed_inputs(page) == [FIRST, OPENING]
    assert "a deleted case" not in shown_text(page)
    # Found by a later turn's message too, as the studio's search finds it.
    found = await web.get(f"/runs/{run_id}", params={"outcome": "", "q": "REFUND THE KETTLE"})
    assert listed_inputs(found.text) == [FIRST]
    failed = (await web.get(f"/runs/{run_id}")).text
    assert listed_inputs(failed) == [FIRST]


async def test_the_flaky_page_shows_a_conversation_by_its_first_user_message(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client, name="Flaky conversations")
    await add_cases(client, dataset["id"], SCRIPTED, OPENED)
    for refunds in (True, False, True):
        await ci_run(client, dataset["id"], refunds=refunds)
    flaky = (await client.get(f"/api/v1/datasets/{dataset['id']}/flaky")).json()["items"]
    assert [(item["input"], item["flips"], item["runs"]) for item in flaky] == [(FIRST, 2, 3)]
    page = await web.get(f"/datasets/{dataset['id']}/flaky")
    assert page.status_code == 200
    shown = shown_text(page.text)
    assert FIRST in shown and OPENING not in shown and "None" not in shown
