"""Review in the web app (contract section 15), as a person's browser uses it without JavaScript,
against an API process and worker processes judging through the fake Anthropic: a run sent to
review from its page, the queue, an item as its case card with Agree / Disagree, Save and next,
people's labels side by side, a refused viewer, another project's item, and Judge agreement
with Make an example."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio
from sklearn.metrics import cohen_kappa_score

from agentlasso.config import Settings
from agentlasso.db.pool import create_pool
from agentlasso.domain.scopes import Scope
from agentlasso.services.accounts import create_user_at
from agentlasso.services.api_keys import create_key_for_project_name
from agentlasso_workers.trace_reading import read_waiting_traces
from tests.integration.test_web_traces import GREETING, GREETING_REPLY, PROTOBUF, greeting
from tests.support.accounts import PASSWORD, new_email, set_password
from tests.support.databases import key_of_scope, new_project_key
from tests.support.judged_runs import (
    CRITERION,
    RIGHT,
    SHORT,
    WRONGLY_FAILED,
    judged_run,
    judging_platform,
)
from tests.support.otlp import protobuf_request
from tests.support.web import browser, csrf_token, lands_on, shown_text, signed_in_csrf

ITEM_LINK = re.compile(r'href="/review/([0-9a-f-]{36})"')


@pytest.fixture(scope="module")
def judging_url(settings: Settings) -> Iterator[str]:
    """An API process and worker processes whose judge is the fake Anthropic, for the module."""
    with judging_platform(settings) as (url, _anthropic):
        yield url


@pytest.fixture
def base_url(judging_url: str) -> str:
    """The judging API process serves the pages in this module."""
    return judging_url


@pytest_asyncio.fixture
async def api(base_url: str, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    """The API, as the `web` fixture's project."""
    async with httpx.AsyncClient(
        base_url=base_url, headers={"x-api-key": api_key}, timeout=60
    ) as http:
        yield http


async def send_to_review(web: httpx.AsyncClient, run_id: str, outcome: str = "all") -> str:
    """Send to review on the run's page; the page the browser lands on, as it reads."""
    csrf = await csrf_token(web)
    fields = {"csrf_token": csrf, "run_id": run_id, "outcome": outcome, "limit": ""}
    sent = await web.post("/review/queue", data=fields)
    assert sent.status_code == 303, sent.text
    assert f"/runs/{run_id}?queued=" in lands_on(sent)
    return shown_text((await web.get(lands_on(sent))).text)


async def queue_items(web: httpx.AsyncClient, **filters: str) -> list[str]:
    """The items the queue lists, in its order."""
    queue = await web.get("/review", params=filters)
    assert queue.status_code == 200, queue.text
    return list(dict.fromkeys(ITEM_LINK.findall(queue.text)))


async def save(web: httpx.AsyncClient, item_id: str, **fields: str) -> httpx.Response:
    """Fill in the item's label form and press Save and next."""
    return await web.post(
        f"/review/{item_id}/labels", data={"csrf_token": await csrf_token(web), **fields}
    )


async def test_a_run_sent_to_review_is_labelled_with_save_and_next(
    web: httpx.AsyncClient, api: httpx.AsyncClient, base_url: str, database_url: str
) -> None:
    _, run_id, _ = await judged_run(api, [RIGHT, WRONGLY_FAILED])
    run_page = await send_to_review(web, run_id)
    assert "2 results joined the review queue" in run_page
    queue = shown_text((await web.get("/review")).text)
    assert "2 pending · 0 done" in queue and "Nobody has labelled an item yet" in queue
    first, second = await queue_items(web)

    item = await web.get(f"/review/{second}")
    assert item.status_code == 200, item.text
    shown = shown_text(item.text)
    # The item shows what its case card shows: the reply, the check's verdict and reasoning.
    assert WRONGLY_FAILED in shown and "It does not meet the criterion." in shown
    assert f"AI judge: {CRITERION}: the judge said failed (check c1)" in shown
    assert 'value="agree"' in item.text and 'value="disagree"' in item.text
    assert "Save and next" in shown

    saved = await save(web, first, check_0="agree", verdict="passed", note="Says 20 EUR")
    assert saved.status_code == 303, saved.text
    assert lands_on(saved).endswith(f"/review/{second}?saved=1")
    next_page = shown_text((await web.get(lands_on(saved))).text)
    assert "Saved your label. This is the next item for you to label." in next_page
    done = await save(web, second, check_0="disagree", verdict="passed", note="It has 20 EUR")
    assert lands_on(done).endswith("/review?finished=1")
    queue = shown_text((await web.get(lands_on(done))).text)
    assert "Nothing is left for you to label" in queue and "0 pending · 2 done" in queue
    assert await queue_items(web, status="pending") == []
    assert await queue_items(web, status="done") == [first, second]
    assert await queue_items(web, assignee="unassigned") == [first, second]
    mine = shown_text((await web.get("/review", params={"assignee": "mine"})).text)
    assert "You signed in with an API key: no item is assigned to a key." in mine

    # A second reviewer (another key of the project, through the API) beside the first.
    other_key = await key_of_scope(database_url, api.headers["x-api-key"], Scope.ADMIN)
    body = {"verdict": "failed", "checks": [{"check_id": "c1", "verdict": "failed"}]}
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other_key}) as other:
        labelled = await other.post(f"/api/v1/review-items/{second}/labels", json=body)
        assert labelled.status_code == 201, labelled.text
    both = await web.get(f"/review/{second}")
    table = both.text[both.text.index("Each reviewer's labels of this item") :]
    rows = [shown_text(row) for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]]
    assert len(rows) == 2 and rows[0].startswith("key ") and rows[1].startswith("key ")
    assert "passed passed It has 20 EUR" in rows[0] and "failed failed" in rows[1]
    assert "yours is filled in below" in shown_text(both.text)
    assert 'value="disagree" checked' in both.text and "It has 20 EUR</textarea>" in both.text


async def test_a_label_with_no_verdict_or_a_bad_one_is_shown_again_naming_the_field(
    web: httpx.AsyncClient, api: httpx.AsyncClient
) -> None:
    _, run_id, _ = await judged_run(api, [RIGHT])
    await send_to_review(web, run_id)
    (item_id,) = await queue_items(web)
    empty = await save(web, item_id, note="forgot the verdict")
    assert empty.status_code == 422
    shown = shown_text(empty.text)
    assert "Nothing was saved" in shown
    assert "A label needs a verdict, a check's verdict or a corrected reply." in shown
    assert 'id="verdict-error"' in empty.text and "forgot the verdict" in empty.text
    bad = await save(web, item_id, verdict="maybe", check_0="perhaps")
    assert bad.status_code == 422
    assert "Choose Passes or Fails" in shown_text(bad.text)
    assert "Choose Agree or Disagree" in shown_text(bad.text)
    assert "0 labels" in shown_text((await web.get(f"/review/{item_id}")).text)
    csrf = await csrf_token(web)
    no_sample = {"csrf_token": csrf, "run_id": run_id, "outcome": "all", "limit": "0"}
    refused = await web.post("/review/queue", data=no_sample)
    assert refused.status_code == 422 and "A sample of 1 to 10,000 results." in refused.text


async def test_another_projects_item_is_not_found_and_a_viewer_may_not_label(
    web: httpx.AsyncClient, api: httpx.AsyncClient, base_url: str, database_url: str
) -> None:
    _, run_id, _ = await judged_run(api, [RIGHT])
    await send_to_review(web, run_id)
    (item_id,) = await queue_items(web)
    async with browser(base_url) as stranger:
        await signed_in_csrf(stranger, await new_project_key(database_url))
        assert (await stranger.get(f"/review/{item_id}")).status_code == 404
        refused = await save(stranger, item_id, verdict="passed")
        assert refused.status_code == 404 and "Not found" in refused.text

    organisation = f"review-{uuid.uuid4().hex[:12]}"
    viewer = await create_user_at(database_url, new_email(), organisation, "viewer")
    key = (await create_key_for_project_name(database_url, organisation)).key
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}) as theirs:
        _, their_run, _ = await judged_run(theirs, [RIGHT])
        assert (
            await theirs.post("/api/v1/review-items", json={"run_id": their_run})
        ).status_code == 201
        their_item = (await theirs.get("/api/v1/review-items")).json()["items"][0]["id"]
    async with browser(base_url) as reader:
        assert (await set_password(reader, viewer.password_token, PASSWORD)).status_code == 303
        assert (await reader.get(f"/review/{their_item}")).status_code == 200
        refused = await save(reader, their_item, verdict="passed")
        assert refused.status_code == 403
        assert (
            'Your role is "viewer"; labelling a review item needs the role "member"'
            in shown_text(refused.text)
        )


async def test_judge_agreement_shows_the_figures_and_makes_an_example_of_a_disagreement(
    web: httpx.AsyncClient, api: httpx.AsyncClient
) -> None:
    replies = [RIGHT, SHORT, WRONGLY_FAILED, WRONGLY_FAILED]
    dataset_id, run_id, case_ids = await judged_run(api, replies)
    await send_to_review(web, run_id)
    items = (await api.get("/api/v1/review-items")).json()["items"]
    item_of = {item["test_case_id"]: item["id"] for item in items}
    people = ["passed", "failed", "passed", "passed"]
    judge = ["passed", "failed", "failed", "failed"]
    for case_id, verdict, said in zip(case_ids, people, judge, strict=True):
        agree = "agree" if verdict == said else "disagree"
        saved = await save(
            web, item_of[case_id], check_0=agree, verdict=verdict, note=f"note {case_id[:8]}"
        )
        assert saved.status_code == 303, saved.text

    dataset = await web.get(f"/datasets/{dataset_id}")
    assert f'href="/datasets/{dataset_id}/judge-agreement"' in dataset.text
    answer = await web.get(f"/datasets/{dataset_id}/judge-agreement")
    assert answer.status_code == 200, answer.text
    shown = shown_text(answer.text)
    kappa = cohen_kappa_score(people, judge)
    assert CRITERION in shown and f"{kappa:.2f} (" in shown
    assert "Jeffreys prior" in shown and "2 disagreements" in shown
    assert "judge failed, people passed 2" in shown and "both passed 1" in shown
    assert "50.0%" in shown, "agreement: two of four"
    for case_id in case_ids[2:]:
        assert f'href="/runs/{run_id}/cases/{case_id}"' in answer.text
        assert f'href="/review/{item_of[case_id]}"' in answer.text

    made = await web.post(
        f"/datasets/{dataset_id}/judge-agreement/examples",
        data={
            "csrf_token": await csrf_token(web),
            "test_case_id": case_ids[2],
            "check_id": "c1",
            "review_item_id": item_of[case_ids[2]],
            "verdict": "passed",
            "note": f"note {case_ids[2][:8]}",
        },
    )
    assert made.status_code == 303, made.text
    after = shown_text((await web.get(lands_on(made))).text)
    assert "the case has a new revision (2)" in after and "the judge will see the example" in after
    earlier = after[after.index("Before the cases last changed") :]
    assert f"{CRITERION} 1 0.0%" in earlier, "the calibrated case's label, on its old revision"
    case = (await api.get(f"/api/v1/test-cases/{case_ids[2]}")).json()
    (example,) = case["checks"][0]["examples"]
    assert (example["verdict"], example["note"]) == ("passed", f"note {case_ids[2][:8]}")
    assert example["reply"] == WRONGLY_FAILED


async def test_kappa_of_one_class_is_said_to_be_undefined_never_a_number(
    web: httpx.AsyncClient, api: httpx.AsyncClient
) -> None:
    dataset_id, run_id, _ = await judged_run(api, [RIGHT, RIGHT])
    await send_to_review(web, run_id)
    for item_id in await queue_items(web):
        assert (await save(web, item_id, check_0="agree", verdict="passed")).status_code == 303
    shown = shown_text((await web.get(f"/datasets/{dataset_id}/judge-agreement")).text)
    assert "undefined (one class only)" in shown
    assert "none" in shown, "no disagreements"


async def test_a_trace_item_shows_its_input_and_reply_and_takes_a_verdict_and_a_correction(
    web: httpx.AsyncClient, api: httpx.AsyncClient, database_url: str
) -> None:
    spans = greeting()
    sent = await api.post("/v1/traces", content=protobuf_request(spans), headers=PROTOBUF)
    assert sent.status_code == 200, sent.text
    pool = await create_pool(database_url, min_size=1, max_size=2, acquire_timeout_s=10)
    try:
        await read_waiting_traces(pool)
    finally:
        await pool.close()
    trace_id = spans[0].trace_id
    queued = await api.post("/api/v1/review-items", json={"trace_ids": [trace_id]})
    assert queued.status_code == 201, queued.text
    (item_id,) = await queue_items(web)

    item = await web.get(f"/review/{item_id}")
    shown = shown_text(item.text)
    assert GREETING in shown and GREETING_REPLY in shown
    assert 'value="agree"' not in item.text, "a trace has no checks to agree with"
    corrected = "We are open from 9 to 6, Monday to Saturday."
    saved = await save(web, item_id, verdict="failed", corrected_output=corrected)
    assert lands_on(saved).endswith("/review?finished=1")
    after = shown_text((await web.get(f"/review/{item_id}")).text)
    assert "1 label" in after and corrected in after
