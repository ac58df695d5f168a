"""Calibrating the judge and the gate's doubts about it (contract section 15), with real worker
processes judging through the fake Anthropic API: disagreements made examples of their
criterion reach the judge's prompt as data and miss the judge cache; the agreement before the
examples stays readable; a completed run warns of a criterion people have not checked enough,
and of one they disagree with."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from agentlasso.config import Settings
from tests.support.api import all_results, create_dataset
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.judged_runs import (
    CRITERION,
    RIGHT,
    WRONGLY_FAILED,
    ci_run_of,
    judged_run,
    judging_platform,
)

NOTE = "20 EUR is the amount: it meets the criterion."


@pytest.fixture(scope="module")
def judging(settings: Settings) -> Iterator[tuple[str, FakeAnthropic]]:
    with judging_platform(settings) as platform:
        yield platform


@pytest.fixture
def base_url(judging: tuple[str, FakeAnthropic]) -> str:
    return judging[0]


@pytest.fixture
def anthropic(judging: tuple[str, FakeAnthropic]) -> FakeAnthropic:
    return judging[1]


@pytest_asyncio.fixture
async def api(base_url: str, database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}, timeout=60) as http:
        yield http


async def label_all(api: httpx.AsyncClient, run_id: str, verdict: str = "passed") -> dict[str, str]:
    """Queue the run's results and label each one's criterion; the items by test case."""
    queued = await api.post("/api/v1/review-items", json={"run_id": run_id})
    assert queued.status_code == 201, queued.text
    page = (await api.get("/api/v1/review-items", params={"limit": 200})).json()
    items = {item["test_case_id"]: item["id"] for item in page["items"] if item["run_id"] == run_id}
    for item_id in items.values():
        body = {"checks": [{"check_id": "c1", "verdict": verdict, "note": NOTE}]}
        answer = await api.post(f"/api/v1/review-items/{item_id}/labels", json=body)
        assert answer.status_code == 201, answer.text
    return items


async def criterion_figures(api: httpx.AsyncClient, dataset_id: str) -> dict[str, object]:
    answer = await api.get(f"/api/v1/datasets/{dataset_id}/judge-agreement")
    assert answer.status_code == 200, answer.text
    (found,) = answer.json()["criteria"]
    assert found["criterion"] == CRITERION
    figures: dict[str, object] = found
    return figures


def prompts_of(anthropic: FakeAnthropic, marker: str) -> list[str]:
    return [r.prompt_text for r in anthropic.requests if marker in r.prompt_text]


async def test_disagreements_made_examples_reach_the_prompt_and_miss_the_cache(
    api: httpx.AsyncClient, anthropic: FakeAnthropic
) -> None:
    dataset_id, run_id, case_ids = await judged_run(api, [RIGHT, WRONGLY_FAILED, WRONGLY_FAILED])
    items = await label_all(api, run_id)
    before = await criterion_figures(api, dataset_id)
    differing = before["disagreements"]
    assert isinstance(differing, list) and len(differing) == 2
    for disagreement in differing:
        made = await api.post(
            f"/api/v1/test-cases/{disagreement['test_case_id']}/checks/c1/examples",
            json={"result_ref": disagreement["review_item_id"], "verdict": "passed", "note": NOTE},
        )
        assert made.status_code == 201, made.text
        (check,) = made.json()["checks"]
        assert check["examples"] == [{"reply": WRONGLY_FAILED, "verdict": "passed", "note": NOTE}]

    # The same replies again: the two calibrated cases ask the judge afresh, examples and all;
    # the third, unchanged, is answered from the cache.
    asked_before = len(anthropic.requests)
    again = await ci_run_of(
        api,
        dataset_id,
        {case_ids[0]: RIGHT, case_ids[1]: WRONGLY_FAILED, case_ids[2]: WRONGLY_FAILED},
    )
    assert (again["judge"]["calls"], again["judge"]["cached"]) == (2, 1)
    new_prompts = [r.prompt_text for r in anthropic.requests[asked_before:]]
    assert len(new_prompts) == 2
    for prompt in new_prompts:
        assert "<criterion_examples>" in prompt and NOTE in prompt
        assert "people have already judged against this same criterion" in prompt
    # The agreement before the examples stays readable beside the figures now.
    after = await criterion_figures(api, dataset_id)
    assert after["labelled"] == 1
    earlier = after["earlier_revisions"]
    assert isinstance(earlier, dict) and earlier["labelled"] == 2
    assert earlier["confusion"]["judge_failed_human_passed"] == 2
    assert set(items) == set(case_ids), "every result of the run was queued and labelled"


async def test_bad_examples_are_refused_naming_what_is_wrong(
    api: httpx.AsyncClient, database_url: str, base_url: str
) -> None:
    _, run_id, case_ids = await judged_run(api, [RIGHT, RIGHT])
    items = await label_all(api, run_id)
    examples = f"/api/v1/test-cases/{case_ids[0]}/checks/c1/examples"
    other_case = {"result_ref": items[case_ids[1]], "verdict": "passed"}
    assert_problem(await api.post(examples, json=other_case), 422, pointer="/result_ref")
    nothing = {"result_ref": "00000000-0000-4000-8000-000000000000", "verdict": "passed"}
    assert_problem(await api.post(examples, json=nothing), 422, pointer="/result_ref")
    bad_verdict = {"result_ref": items[case_ids[0]], "verdict": "sort of"}
    assert_problem(await api.post(examples, json=bad_verdict), 422, pointer="/verdict")
    no_check = f"/api/v1/test-cases/{case_ids[0]}/checks/c7/examples"
    good = {"result_ref": items[case_ids[0]], "verdict": "passed"}
    missing = await api.post(no_check, json=good)
    assert missing.status_code == 404, missing.text
    for _ in range(10):
        assert (await api.post(examples, json=good)).status_code == 201
    full = await api.post(examples, json=good)
    assert full.status_code == 409 and "at most 10 examples" in full.json()["detail"]
    other = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other}) as stranger:
        assert (await stranger.post(examples, json=good)).status_code == 404


async def test_a_completed_run_warns_of_a_judge_people_have_not_checked_or_disagree_with(
    api: httpx.AsyncClient,
) -> None:
    replies = [RIGHT] * 10 + [WRONGLY_FAILED] * 10
    dataset_id, run_id, case_ids = await judged_run(api, replies)
    first = (await api.get(f"/api/v1/eval-runs/{run_id}")).json()
    (unchecked,) = first["judge_warnings"]
    assert CRITERION in unchecked and "has 0 of the 20 labelled results" in unchecked

    # People pass every reply; the judge failed half: kappa 0 over 20 labels.
    await label_all(api, run_id)
    again = await ci_run_of(api, dataset_id, dict(zip(case_ids, replies, strict=True)))
    (doubted,) = again["judge_warnings"]
    assert CRITERION in doubted and "at kappa 0.00" in doubted
    assert "over 20 labelled results, below 0.6" in doubted
    figures = await criterion_figures(api, dataset_id)
    assert figures["labelled"] == 20 and figures["cohen_kappa"] == pytest.approx(0.0)


async def test_a_run_without_an_ai_judge_check_has_no_judge_warnings(
    api: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(api)
    created = await api.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases",
        json={"input": "hi", "checks": [{"type": "output_contains", "value": "refund"}]},
    )
    assert created.status_code == 201, created.text
    final = await ci_run_of(api, dataset["id"], {created.json()["id"]: RIGHT})
    assert final["status"] == "completed" and final["judge_warnings"] == []


async def test_a_project_may_count_a_doubted_criterions_failures_as_not_graded(
    api: httpx.AsyncClient,
) -> None:
    setting = await api.patch("/api/v1/judge-settings", json={"doubted_judge_not_graded": True})
    assert setting.status_code == 200 and setting.json()["doubted_judge_not_graded"] is True
    replies = [RIGHT] * 10 + [WRONGLY_FAILED] * 10
    dataset_id, run_id, case_ids = await judged_run(api, replies)
    # Nobody has labelled the criterion yet: its failures stand (and the run warns of it).
    first = {r["test_case_id"]: r for r in await all_results(api, run_id)}
    assert first[case_ids[-1]]["check_results"][0]["status"] == "failed"

    await label_all(api, run_id)
    again = await ci_run_of(api, dataset_id, dict(zip(case_ids, replies, strict=True)))
    results = {r["test_case_id"]: r for r in await all_results(api, again["run_id"])}
    doubted = results[case_ids[-1]]["check_results"][0]
    assert doubted["status"] == "not_graded" and doubted["passed"] is None
    assert "its failure is set aside by the project's setting" in doubted["detail"]
    assert "at kappa 0.00 over 20 labelled results" in doubted["detail"]
    # A pass is a pass: only the doubted judge's failures are set aside.
    assert results[case_ids[0]]["check_results"][0]["status"] == "passed"
    # A critical check not graded still keeps its case from passing (contract 4.3): the case is
    # partially graded, and says why, rather than failed by a judge nobody trusts.
    assert results[case_ids[-1]]["partially_graded"] is True
    assert results[case_ids[-1]]["pass_fail"] is False
    audit = (await api.get("/api/v1/audit-log", params={"action": "judge_doubt.changed"})).json()
    assert [entry["changes"] for entry in audit["items"]] == [{"before": False, "after": True}]
