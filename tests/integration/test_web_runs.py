"""Test Runs in the web app: a run's page and a case's card, as a person reads them, against a
real `agentlasso api` process (a CI-mode run posted through the API)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from tests.support.databases import new_project_key
from tests.support.runs import ci_run_with_one_failure
from tests.support.web import hidden_field, shown_text


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    """The web app as `agentlasso api` serves it, in a process of its own."""
    return api_process_url


@pytest_asyncio.fixture
async def other_project_client(
    base_url: str, database_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    """The API client of a second project."""
    headers = {"x-api-key": await new_project_key(database_url)}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as http:
        yield http


async def test_a_run_opens_on_its_failures_with_the_gate_and_counts(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    run = await ci_run_with_one_failure(client)
    listed = shown_text((await web.get("/runs")).text)
    assert "Refunds" in listed and "gate failed" in listed
    page = await web.get(f"/runs/{run['run_id']}")
    assert page.status_code == 200
    shown = shown_text(page.text)
    assert "Run of Refunds gate failed" in shown
    assert "2 of 2 in: 1 passed, 1 failed, 0 not graded" in shown
    assert "50.0% against a threshold of" in shown
    assert "A refund question" in shown, "the failure is listed"
    assert "A greeting" not in shown, "it opens on the failures"
    assert "Output must contain, Tool must NOT be called" in shown
    everything = shown_text((await web.get(f"/runs/{run['run_id']}?outcome=")).text)
    assert "A refund question" in everything and "A greeting" in everything


async def test_a_case_card_shows_the_reply_beside_each_checks_verdict(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    run = await ci_run_with_one_failure(client)
    card = await web.get(f"/runs/{run['run_id']}/cases/{run['failing']}")
    assert card.status_code == 200
    shown = shown_text(card.text)
    assert "A refund question failed" in shown
    assert "Where is my refund for order 1234?" in shown
    assert "I cancelled the order for you." in shown
    assert 'orders.cancel {"order": 1234}' in shown, "the tool calls with their arguments"
    assert "Output must contain delay · critical failed" in shown
    assert "Tool must NOT be called keep · critical failed" in shown
    assert "revision 1 of the case ran" in shown


async def test_the_card_opens_the_rubric_editor_with_the_reply_that_failed(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    run = await ci_run_with_one_failure(client)
    editor = await web.get(f"/cases/{run['failing']}", params={"reply_from": run["run_id"]})
    assert editor.status_code == 200
    assert "I cancelled the order for you.</textarea>" in editor.text
    assert "orders.cancel" in editor.text
    assert '<details class="paste" open>' in editor.text, "Paste a reply is open"
    elsewhere = await web.get(f"/cases/{run['passing']}", params={"reply_from": "not-a-run"})
    assert elsewhere.status_code == 404


async def test_another_projects_run_and_card_are_not_found(
    web: httpx.AsyncClient, other_project_client: httpx.AsyncClient
) -> None:
    run = await ci_run_with_one_failure(other_project_client)
    for path in (f"/runs/{run['run_id']}", f"/runs/{run['run_id']}/cases/{run['failing']}"):
        answer = await web.get(path)
        assert answer.status_code == 404, path
        assert "Refunds" not in shown_text(answer.text)
    assert "Refunds" not in shown_text((await web.get("/runs")).text)


async def test_cancel_ends_a_run_that_waits_for_results_and_keeps_it_readable(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    dataset = await client.post("/api/v1/datasets", json={"name": "Waiting"})
    dataset_id = dataset.json()["id"]
    await client.post(
        f"/api/v1/datasets/{dataset_id}/test-cases",
        json={"input": "Hi", "checks": [{"type": "output_contains", "value": "hi"}]},
    )
    created = await client.post(
        "/api/v1/eval-runs", json={"dataset_id": dataset_id, "labels": {"branch": "fix-refunds"}}
    )
    run_id = created.json()["run_id"]
    page = await web.get(f"/runs/{run_id}")
    assert "branch: fix-refunds" in shown_text(page.text)
    csrf = hidden_field(page.text, "csrf_token")
    cancelled = await web.post(f"/runs/{run_id}/cancel", data={"csrf_token": csrf})
    assert cancelled.status_code == 303
    assert (await client.get(f"/api/v1/eval-runs/{run_id}")).json()["status"] == "cancelled"
    after = shown_text((await web.get(f"/runs/{run_id}")).text)
    assert "Status cancelled" in after and "gate failed" in after
    listed = shown_text((await web.get("/runs")).text)
    assert "branch: fix-refunds" in listed
