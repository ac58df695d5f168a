"""A run's case card as a person reads it, against real `agentlasso api` processes: the text a
check found marked in the reply, the expected output diffed against it word by word, the data
context, the judge's samples and flags, and what has become of the case since the run."""

from __future__ import annotations

import html
import json
from typing import Any

import httpx
import pytest

from agentlasso.config import Settings
from tests.support.api import FINAL, create_dataset, start_run, wait_final
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic, scored
from tests.support.processes import WorkerProcesses, api_process
from tests.support.runs import ci_run_with_one_failure
from tests.support.web import browser, shown_text, signed_in_csrf

PROMISE_CASE = {
    "input": "Can I get my refund?",
    "description": "A promise",
    "expected_output": "Your refund arrives in 3-5 business days.",
    "checks": [
        {"type": "output_not_contains", "value": "guarantee", "id": "no-promise"},
        {"type": "output_contains", "value": r"\d-\d business days", "regex": True, "id": "delay"},
    ],
}
PROMISE_REPLY = "Your refund <b>arrives</b> Monday, I guarantee it."
LOOKUP_ARGUMENTS = {
    "order": 1234,
    "reason": "the customer asked where the refund is",
    "notify": True,
}


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    """The web app as `agentlasso api` serves it, in a process of its own."""
    return api_process_url


async def ci_run(
    client: httpx.AsyncClient, cases: list[dict[str, Any]], reply: str, **dataset: Any
) -> tuple[str, list[str]]:
    """A CI run of a new dataset of these cases, every case answered with `reply` and one
    lookup whose arguments are sent as a JSON string; the run's id and the cases' ids."""
    created = await create_dataset(client, **dataset)
    ids = []
    for case in cases:
        answer = await client.post(f"/api/v1/datasets/{created['id']}/test-cases", json=case)
        assert answer.status_code == 201, answer.text
        ids.append(answer.json()["id"])
    run = await start_run(client, dataset_id=created["id"])
    calls = [{"name": "orders.lookup", "arguments": json.dumps(LOOKUP_ARGUMENTS)}]
    results = [
        {"test_case_id": case_id, "actual_output": reply, "actual_tool_calls": calls}
        for case_id in ids
    ]
    posted = await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
    )
    assert posted.status_code in (200, 202), posted.text
    return run["run_id"], ids


async def test_the_card_marks_the_forbidden_text_in_the_reply_and_diffs_the_expected_output(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    context = {"store": "Acme", "refund_days": "3-5"}
    run_id, (case_id,) = await ci_run(client, [PROMISE_CASE], PROMISE_REPLY, data_context=context)
    card = await web.get(f"/runs/{run_id}/cases/{case_id}")
    assert card.status_code == 200
    shown = shown_text(card.text)
    assert "A promise failed" in shown
    assert 'Forbidden in output no-promise · critical failed Forbidden "guarantee" found' in shown
    assert "Output must contain delay · critical failed" in shown
    # The reply is the agent's text, never HTML: escaped, with only the mark added.
    assert (
        "Your refund &lt;b&gt;arrives&lt;/b&gt; Monday, I <mark>guarantee</mark> it." in card.text
    )
    assert "<b>arrives" not in card.text
    assert "Marked in the reply below: what the text checks found (1)." in shown
    assert (
        # shown_text puts a space where each tag was, the closing brackets' included.
        "The expected output against the reply Your refund [removed: arrives in 3-5 business "
        "days. ] [added: <b>arrives</b> Monday, I guarantee it. ]"
    ) in shown
    assert "<del>" in card.text and "<ins>" in card.text
    assert "Data context The dataset's, as it is now" in shown
    assert '"refund_days": "3-5"' in shown


async def test_a_json_string_of_arguments_is_pretty_printed_like_an_object(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    run_id, (case_id,) = await ci_run(client, [PROMISE_CASE], PROMISE_REPLY)
    card = html.unescape((await web.get(f"/runs/{run_id}/cases/{case_id}")).text)
    assert json.dumps(LOOKUP_ARGUMENTS, indent=2) in card
    short = await ci_run_with_one_failure(client)
    small = shown_text((await web.get(f"/runs/{short['run_id']}/cases/{short['failing']}")).text)
    assert 'orders.cancel {"order": 1234}' in small, "short arguments stay on one line"


async def test_the_card_says_when_the_case_changed_since_the_run_and_when_it_was_deleted(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    run = await ci_run_with_one_failure(client)
    path = f"/runs/{run['run_id']}/cases/{run['failing']}"
    unchanged = await web.get(path)
    assert "The case has not changed since this run." in shown_text(unchanged.text)
    assert f'<a href="/cases/{run["failing"]}">The case as it is now</a>' in unchanged.text

    edited = await client.patch(
        f"/api/v1/test-cases/{run['failing']}", json={"description": "A reworded question"}
    )
    assert edited.status_code == 200, edited.text
    changed = await web.get(path)
    shown = shown_text(changed.text)
    assert "A refund question failed" in shown, "the card shows the revision that ran"
    assert "revision 1 of the case ran" in shown
    assert "The case has changed since this run: it is at revision 2 now." in shown
    assert f'<a href="/cases/{run["failing"]}">The case as it is now</a>' in changed.text

    deleted = await client.delete(f"/api/v1/test-cases/{run['failing']}")
    assert deleted.status_code == 204, deleted.text
    gone = await web.get(path)
    assert gone.status_code == 200
    shown = shown_text(gone.text)
    assert "The case has been deleted since this run." in shown
    assert "I cancelled the order for you." in shown
    assert "Open in rubric editor" not in shown and "The case as it is now" not in shown


def judge_env(settings: Settings, fake: FakeAnthropic) -> dict[str, str]:
    """An API process and a worker judging with the fake Anthropic, shown 100 characters."""
    return {
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "ANTHROPIC_BASE_URL": fake.base_url,
        "AGENTLASSO_JUDGE_MODEL": "claude-sonnet-5-5",
        "AGENTLASSO_JUDGE_TIMEOUT_S": "5",
        "AGENTLASSO_JUDGE_MAX_INPUT_CHARS": "100",
    }


async def test_the_judges_samples_flags_and_tokens_are_on_its_check(
    settings: Settings, api_key: str
) -> None:
    near_the_floor = {
        "input": "refund near the floor", "description": "Near the floor",
        "expected_output": "near the floor: refund", "evaluation_type": "SCORE",
        "min_confidence": 70, "checks": [],
    }  # fmt: skip
    amount = {
        "input": "refund amount?",
        "description": "The amount",
        "checks": [{"type": "llm_judge", "criterion": "States the refund amount"}],
    }
    reply = "Your refund of 20 EUR " + "is on its way " * 40
    workers = WorkerProcesses(
        settings.database_url, settings.redis_url, settings.queue_name, settings.secret_key or ""
    )
    with FakeAnthropic() as anthropic:
        anthropic.when("near the floor", scored(72), scored(65), scored(75))
        env = judge_env(settings, anthropic)
        try:
            with api_process(settings.database_url, settings.redis_url, env) as (url, _pid):
                workers.start(extra_env=env)
                await judged_cards(url, api_key, [near_the_floor, amount], reply)
        finally:
            workers.stop_all()


async def judged_cards(url: str, api_key: str, cases: list[dict[str, Any]], reply: str) -> None:
    """Run the cases in CI mode, then the second again: read the first run's sampled card, and
    the second run's card answered from the cache."""
    headers = {"x-api-key": api_key}
    async with (
        httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client,
        browser(url) as web,
    ):
        await signed_in_csrf(web, api_key)
        first_run, (near_id, _amount_id) = await ci_run(client, cases, reply)
        assert (await wait_final(client, first_run))["status"] in FINAL
        near = shown_text((await web.get(f"/runs/{first_run}/cases/{near_id}")).text)
        assert "The AI judge scored the reply 72/100, reaching the minimum 70." in near
        assert "model claude-sonnet-5-5 · samples 0.72, 0.65, 0.75" in near or (
            "model claude-sonnet-5-5 · samples 0.72, 0.75, 0.65" in near
        )
        assert "flaky: the samples disagree" in near
        assert "the judge was shown only the start of the reply (100 of" in near
        assert " tokens in, " in near
        assert "answered from the cache" not in near

        # The same question and reply, in a new dataset: the judge cache answers it.
        again, (amount_again,) = await ci_run(client, cases[1:], reply)
        assert (await wait_final(client, again))["status"] in FINAL
        cached = shown_text((await web.get(f"/runs/{again}/cases/{amount_again}")).text)
        assert "AI judge: meets a criterion" in cached and "model claude-sonnet-5-5" in cached
        assert "answered from the cache" in cached
