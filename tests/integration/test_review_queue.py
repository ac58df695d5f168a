"""The review queue and the judge's agreement with people, over HTTP, with real worker processes
judging through the fake Anthropic API: a criterion the judge gets wrong on a known subset,
queued from a run, labelled by two people, measured against scikit-learn, and an edited case
starting afresh (contract section 15)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from agentlasso.config import Settings
from agentlasso.db.pool import create_pool
from agentlasso.domain.scopes import Scope
from agentlasso_workers.trace_reading import read_waiting_traces
from tests.support.assertions import assert_problem
from tests.support.databases import key_of_scope, new_project_key
from tests.support.judged_runs import (
    CRITERION,
    RIGHT,
    SHORT,
    WRONGLY_FAILED,
    judged_run,
    judging_platform,
)
from tests.support.otlp import protobuf_request, refund_conversation


@pytest.fixture(scope="module")
def judging_url(settings: Settings) -> Iterator[str]:
    """An API process and worker processes whose judge is the fake Anthropic, for the module."""
    with judging_platform(settings) as (url, _anthropic):
        yield url


@pytest.fixture
def base_url(judging_url: str) -> str:
    """The judging API process stands in for the in-process server in this module."""
    return judging_url


@pytest_asyncio.fixture
async def api(base_url: str, database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}, timeout=60) as http:
        yield http


async def queue_of(api: httpx.AsyncClient, **query: str) -> dict[str, Any]:
    answer = await api.get("/api/v1/review-items", params=query)
    assert answer.status_code == 200, answer.text
    page: dict[str, Any] = answer.json()
    return page


async def label(
    api: httpx.AsyncClient, item_id: str, verdict: str, note: str | None = None
) -> dict[str, Any]:
    """Label the item's one judged check (and the whole result) with this verdict."""
    body = {"verdict": verdict, "checks": [{"check_id": "c1", "verdict": verdict, "note": note}]}
    answer = await api.post(f"/api/v1/review-items/{item_id}/labels", json=body)
    assert answer.status_code == 201, answer.text
    item: dict[str, Any] = answer.json()
    return item


async def agreement_of(api: httpx.AsyncClient, dataset_id: str) -> dict[str, Any]:
    answer = await api.get(f"/api/v1/datasets/{dataset_id}/judge-agreement")
    assert answer.status_code == 200, answer.text
    criteria = answer.json()["criteria"]
    assert [c["criterion"] for c in criteria] == [CRITERION]
    found: dict[str, Any] = criteria[0]
    return found


async def test_a_run_queued_and_labelled_by_two_people_measures_the_judge(
    api: httpx.AsyncClient, database_url: str, base_url: str
) -> None:
    replies = [RIGHT, RIGHT, RIGHT, SHORT, WRONGLY_FAILED, WRONGLY_FAILED, WRONGLY_FAILED]
    dataset_id, run_id, case_ids = await judged_run(api, replies)
    queued = await api.post("/api/v1/review-items", json={"run_id": run_id})
    assert queued.status_code == 201 and queued.json() == {"enqueued": 7}
    again = await api.post("/api/v1/review-items", json={"run_id": run_id})
    assert again.json() == {"enqueued": 0}, "a result already queued is not queued twice"
    page = await queue_of(api, status="pending")
    assert (page["pending"], page["done"]) == (7, 0)
    item_of = {item["test_case_id"]: item["id"] for item in page["items"]}
    assert set(item_of) == set(case_ids)

    shown = (await api.get(f"/api/v1/review-items/{item_of[case_ids[4]]}")).json()
    check = shown["result"]["check_results"][0]
    assert shown["result"]["actual_output"] == WRONGLY_FAILED
    assert (check["id"], check["status"], check["reasoning"]) == (
        "c1", "failed", "It does not meet the criterion.",
    )  # fmt: skip

    # The first person: every reply with the amount meets the criterion; the short one does not.
    human = ["passed", "passed", "passed", "failed", "passed", "passed", "passed"]
    for case_id, verdict in zip(case_ids, human, strict=True):
        await label(
            api, item_of[case_id], verdict, note="It says 20 EUR" if verdict == "passed" else None
        )
    # A second person agrees on the first case and disagrees with the first person on the fifth.
    second = httpx.AsyncClient(
        base_url=base_url,
        headers={
            "x-api-key": await key_of_scope(database_url, api.headers["x-api-key"], Scope.ADMIN)
        },
    )
    async with second:
        await label(second, item_of[case_ids[0]], "passed")
        both = await label(second, item_of[case_ids[4]], "failed")
    assert [each["verdict"] for each in both["labels"]] == ["passed", "failed"]
    assert len({each["reviewer"] for each in both["labels"]}) == 2

    found = await agreement_of(api, dataset_id)
    # The fifth case is a tie between the two people: left out. The rest, against the judge.
    judge = ["passed", "passed", "passed", "failed", "failed", "failed"]
    people = ["passed", "passed", "passed", "failed", "passed", "passed"]
    expected = confusion_matrix(people, judge, labels=["failed", "passed"])
    assert found["ties"] == 1 and found["labelled"] == 6
    assert found["confusion"] == {
        "both_failed": int(expected[0][0]),
        "judge_passed_human_failed": int(expected[0][1]),
        "judge_failed_human_passed": int(expected[1][0]),
        "both_passed": int(expected[1][1]),
    }
    assert found["cohen_kappa"] == pytest.approx(cohen_kappa_score(people, judge))
    assert found["agreement"] == pytest.approx(4 / 6)
    assert found["human_pass_rate"] == pytest.approx(5 / 6)
    assert found["judge_pass_rate"] == pytest.approx(3 / 6)
    assert found["true_positive_rate"] == pytest.approx(3 / 5)
    assert found["true_negative_rate"] == pytest.approx(1.0)
    low, high = found["kappa_ci95"]
    assert low <= found["cohen_kappa"] <= high and high - low > 0.5, "six labels: a wide interval"
    # Two people on two results: one pair agreed, one did not.
    assert found["reviewer_agreement"] == pytest.approx(0.5)
    differing = found["disagreements"]
    assert {d["test_case_id"] for d in differing} == {case_ids[5], case_ids[6]}
    assert all(d["judge_verdict"] == "failed" and d["human_verdict"] == "passed" for d in differing)
    assert differing[0]["notes"] == "It says 20 EUR"
    assert differing[0]["case_url"] == f"/runs/{run_id}/cases/{differing[0]['test_case_id']}"
    assert (await queue_of(api, status="done"))["done"] == 7


async def test_an_edited_case_starts_its_labels_afresh_and_keeps_the_old_ones_readable(
    api: httpx.AsyncClient,
) -> None:
    dataset_id, run_id, case_ids = await judged_run(api, [RIGHT, WRONGLY_FAILED])
    await api.post("/api/v1/review-items", json={"run_id": run_id})
    items = {item["test_case_id"]: item["id"] for item in (await queue_of(api))["items"]}
    for case_id in case_ids:
        await label(api, items[case_id], "passed")
    assert (await agreement_of(api, dataset_id))["labelled"] == 2

    edited = await api.patch(
        f"/api/v1/test-cases/{case_ids[1]}", json={"input": "refund, reworded"}
    )
    assert edited.status_code == 200, edited.text
    assert (await agreement_of(api, dataset_id))["labelled"] == 1
    kept = (await api.get(f"/api/v1/review-items/{items[case_ids[1]]}")).json()
    assert [each["verdict"] for each in kept["labels"]] == ["passed"]


async def test_bad_labels_and_queues_are_refused_naming_the_field(
    api: httpx.AsyncClient, database_url: str, base_url: str
) -> None:
    _, run_id, _ = await judged_run(api, [RIGHT])
    both = await api.post("/api/v1/review-items", json={"run_id": run_id, "trace_ids": ["t"]})
    assert_problem(both, 422, pointer="/run_id")
    nobody = await api.post(
        "/api/v1/review-items", json={"run_id": run_id, "assignee": "no@example.com"}
    )
    assert_problem(nobody, 422, pointer="/assignee")
    unknown_trace = await api.post("/api/v1/review-items", json={"trace_ids": ["nope"]})
    assert_problem(unknown_trace, 422, pointer="/trace_ids/0")
    await api.post("/api/v1/review-items", json={"run_id": run_id, "outcome": "passed"})
    item_id = (await queue_of(api))["items"][0]["id"]
    # A filter naming someone who is not a member finds nothing; `none` finds the unassigned.
    assert (await queue_of(api, assignee="nobody@example.com"))["items"] == []
    assert [i["id"] for i in (await queue_of(api, assignee="none"))["items"]] == [item_id]
    labels = f"/api/v1/review-items/{item_id}/labels"
    assert_problem(await api.post(labels, json={}), 422, pointer="/verdict")
    not_judged = {"checks": [{"check_id": "c9", "verdict": "passed"}]}
    assert_problem(await api.post(labels, json=not_judged), 422, pointer="/checks/0/check_id")
    twice = {"checks": [{"check_id": "c1", "verdict": "passed"}] * 2}
    assert_problem(await api.post(labels, json=twice), 422, pointer="/checks/1/check_id")
    assert_problem(await api.post(labels, json={"verdict": "maybe"}), 422, pointer="/verdict")

    ci_key = await key_of_scope(database_url, api.headers["x-api-key"], Scope.CI)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": ci_key}) as ci:
        refused = await ci.post(labels, json={"verdict": "passed"})
        assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    other = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other}) as stranger:
        assert (await stranger.get(f"/api/v1/review-items/{item_id}")).status_code == 404
        assert (await stranger.post(labels, json={"verdict": "passed"})).status_code == 404
        assert (
            await stranger.post("/api/v1/review-items", json={"run_id": run_id})
        ).status_code == 404


async def a_stored_trace(api: httpx.AsyncClient, database_url: str) -> tuple[str, str]:
    """A trace exported over OTLP and read (as a worker reads it); its id and its reply."""
    spans = refund_conversation()
    exported = await api.post(
        "/v1/traces",
        content=protobuf_request(spans),
        headers={"content-type": "application/x-protobuf"},
    )
    assert exported.status_code == 200, exported.text
    pool = await create_pool(database_url, min_size=1, max_size=2, acquire_timeout_s=10)
    try:
        await read_waiting_traces(pool)
    finally:
        await pool.close()
    # The module's worker processes read the inbox too: whichever did, wait for the trace.
    for _ in range(100):
        found = await api.get(f"/api/v1/traces/{spans[0].trace_id}")
        if found.status_code == 200:
            return spans[0].trace_id, found.json()["output"]
        await asyncio.sleep(0.1)
    raise AssertionError(f"the trace was not stored: {found.text}")


async def test_a_reviewed_trace_becomes_a_case_expecting_the_reviewers_reply(
    api: httpx.AsyncClient, database_url: str
) -> None:
    trace_id, reply = await a_stored_trace(api, database_url)
    queued = await api.post("/api/v1/review-items", json={"trace_ids": [trace_id]})
    assert queued.json() == {"enqueued": 1}
    (item,) = (await queue_of(api))["items"]
    assert (item["kind"], item["trace_id"]) == ("trace", trace_id)
    labels = f"/api/v1/review-items/{item['id']}/labels"
    no_checks = {"checks": [{"check_id": "c1", "verdict": "passed"}]}
    assert_problem(await api.post(labels, json=no_checks), 422, pointer="/checks")
    dataset = (await api.post("/api/v1/datasets", json={"name": "from review"})).json()
    make = f"/api/v1/review-items/{item['id']}/test-case"
    # Not reviewed yet: nothing to expect.
    assert (await api.post(make, json={"dataset_id": dataset["id"]})).status_code == 409

    assert (await api.post(labels, json={"verdict": "passed"})).status_code == 201
    passed = await api.post(make, json={"dataset_id": dataset["id"]})
    assert passed.status_code == 201, passed.text
    assert passed.json()["expected_output"] == reply
    assert passed.json()["source_trace_id"] == trace_id

    corrected = "I have refunded order 1234: the money is back within 3 business days."
    await api.post(labels, json={"verdict": "failed", "corrected_output": corrected})
    fixed = await api.post(make, json={"dataset_id": dataset["id"]})
    assert fixed.status_code == 201 and fixed.json()["expected_output"] == corrected
