"""Which cases a run runs (contract 17): those with the tags asked for, a dataset version's
frozen revisions, or both; and comparisons keep to the cases both runs covered."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.test_comparisons import BAD, GOOD, compare, post
from tests.support.api import create_dataset
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key

SAYS_DELAY = {"type": "output_contains", "value": "3-5 business days", "id": "delay"}


async def tagged_dataset(
    client: httpx.AsyncClient, cases: dict[str, list[str]]
) -> tuple[str, dict[str, str]]:
    """A dataset with a case per name (input `refund NAME`) and its tags; its id and case ids."""
    dataset = await create_dataset(client, name="Tagged")
    ids = {}
    for name, tags in cases.items():
        body = {"input": f"refund {name}", "checks": [SAYS_DELAY], "tags": tags}
        created = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=body)
        assert created.status_code == 201, created.text
        ids[name] = created.json()["id"]
    return dataset["id"], ids


async def start(client: httpx.AsyncClient, dataset_id: str, **body: Any) -> dict[str, Any]:
    created = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id, **body})
    assert created.status_code == 201, created.text
    run: dict[str, Any] = created.json()
    return run


def inputs(run: dict[str, Any]) -> list[str]:
    return [case["input"] for case in run["test_cases"]]


async def freeze(client: httpx.AsyncClient, dataset_id: str, name: str) -> dict[str, Any]:
    response = await client.post(f"/api/v1/datasets/{dataset_id}/versions", json={"name": name})
    assert response.status_code == 201, response.text
    version: dict[str, Any] = response.json()
    return version


async def test_a_run_with_tags_runs_only_the_cases_with_one_of_them(
    client: httpx.AsyncClient,
) -> None:
    dataset_id, _ = await tagged_dataset(
        client, {"a": ["smoke"], "b": ["billing"], "c": ["smoke", "billing"], "d": []}
    )
    run = await start(client, dataset_id, tags=["smoke", "nightly"])
    assert inputs(run) == ["refund a", "refund c"]
    assert run["total"] == 2
    assert run["tags"] == ["smoke", "nightly"]
    read = (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()
    assert read["tags"] == ["smoke", "nightly"]
    assert read["dataset_version"] is None and read["dataset_version_id"] is None

    every = await start(client, dataset_id, tags=[])
    assert len(every["test_cases"]) == 4 and every["tags"] is None, "no tag asked: every case"


async def test_tags_no_case_has_are_a_422_that_says_so(client: httpx.AsyncClient) -> None:
    dataset_id, _ = await tagged_dataset(client, {"a": ["smoke"]})
    response = await client.post(
        "/api/v1/eval-runs", json={"dataset_id": dataset_id, "tags": ["Smoke"]}
    )
    problem = assert_problem(response, 422, pointer="/tags")
    assert "No case in the dataset has any of the tags Smoke" in problem["detail"]
    runs = (await client.get("/api/v1/eval-runs", params={"dataset_id": dataset_id})).json()
    assert runs["items"] == [], "nothing was started"
    bad = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id, "tags": ["a b"]})
    assert_problem(bad, 422, pointer="/tags/0")


async def test_a_version_freezes_every_live_case_at_its_revision(
    client: httpx.AsyncClient,
) -> None:
    dataset_id, ids = await tagged_dataset(client, {"a": ["smoke"], "b": [], "c": ["smoke"]})
    await client.delete(f"/api/v1/test-cases/{ids['c']}")
    version = await freeze(client, dataset_id, "v1")
    assert version["name"] == "v1" and version["case_count"] == 2
    assert version["dataset_id"] == dataset_id and version["created_at"]

    # After the freeze: a case edited, one deleted, one added.
    edited = {"input": "refund a, edited", "tags": ["nightly"]}
    assert (await client.patch(f"/api/v1/test-cases/{ids['a']}", json=edited)).status_code == 200
    await client.delete(f"/api/v1/test-cases/{ids['b']}")
    await client.post(f"/api/v1/datasets/{dataset_id}/test-cases", json={"input": "refund new"})

    by_name = await start(client, dataset_id, dataset_version="v1")
    assert inputs(by_name) == ["refund a", "refund b"], "the frozen revisions, deleted or not"
    assert by_name["dataset_version"] == "v1" and by_name["dataset_version_id"] == version["id"]
    by_id = await start(client, dataset_id, dataset_version=version["id"])
    assert inputs(by_id) == ["refund a", "refund b"]
    # Tags and a version combine: the version's cases with those tags, as they were tagged then.
    smoke = await start(client, dataset_id, dataset_version="v1", tags=["smoke"])
    assert inputs(smoke) == ["refund a"]
    nightly = await client.post(
        "/api/v1/eval-runs",
        json={"dataset_id": dataset_id, "dataset_version": "v1", "tags": ["nightly"]},
    )
    problem = assert_problem(nightly, 422, pointer="/tags")
    assert "version 'v1'" in problem["detail"]
    live = await start(client, dataset_id)
    assert inputs(live) == ["refund a, edited", "refund new"]

    # The frozen run grades what it was sent, and reads as that version.
    graded = await post_by_input(client, by_name, {"refund a": GOOD, "refund b": BAD})
    assert graded["counts"]["passed"] == 1 and graded["counts"]["failed"] == 1


async def post_by_input(
    client: httpx.AsyncClient, run: dict[str, Any], replies: dict[str, str]
) -> dict[str, Any]:
    by_input = {case["input"]: case["test_case_id"] for case in run["test_cases"]}
    results = [
        {"test_case_id": by_input[text], "actual_output": reply, "actual_tool_calls": []}
        for text, reply in replies.items()
    ]
    answer = await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def test_versions_are_listed_newest_first_a_page_at_a_time(
    client: httpx.AsyncClient,
) -> None:
    dataset_id, _ = await tagged_dataset(client, {"a": []})
    for name in ("v1", "v2", "v3"):
        await freeze(client, dataset_id, name)
    first = (await client.get(f"/api/v1/datasets/{dataset_id}/versions?limit=2")).json()
    assert [version["name"] for version in first["items"]] == ["v3", "v2"]
    rest = await client.get(
        f"/api/v1/datasets/{dataset_id}/versions", params={"cursor": first["next_cursor"]}
    )
    assert [version["name"] for version in rest.json()["items"]] == ["v1"]
    assert rest.json()["next_cursor"] is None


async def test_a_version_name_is_unique_in_its_dataset_and_not_an_id(
    client: httpx.AsyncClient,
) -> None:
    dataset_id, _ = await tagged_dataset(client, {"a": []})
    await freeze(client, dataset_id, "v1")
    again = await client.post(f"/api/v1/datasets/{dataset_id}/versions", json={"name": "v1"})
    assert "already has a version named 'v1'" in assert_problem(again, 409)["detail"]
    other_id, _ = await tagged_dataset(client, {"a": []})
    await freeze(client, other_id, "v1")  # another dataset may use the name

    for name in ("", " v1", "00000000-0000-4000-8000-000000000000", "x" * 201, "a\x00"):
        response = await client.post(f"/api/v1/datasets/{dataset_id}/versions", json={"name": name})
        assert_problem(response, 422, pointer="/name")
    missing = await client.post(
        "/api/v1/eval-runs", json={"dataset_id": dataset_id, "dataset_version": "v9"}
    )
    assert_problem(missing, 404, pointer="/dataset_version")
    # A version of another dataset is not one of this dataset's.
    elsewhere = (await client.get(f"/api/v1/datasets/{other_id}/versions")).json()["items"][0]
    crossed = await client.post(
        "/api/v1/eval-runs", json={"dataset_id": dataset_id, "dataset_version": elsewhere["id"]}
    )
    assert_problem(crossed, 404, pointer="/dataset_version")


async def test_another_projects_versions_are_not_found(
    client: httpx.AsyncClient, base_url: str, database_url: str
) -> None:
    dataset_id, _ = await tagged_dataset(client, {"a": []})
    version = await freeze(client, dataset_id, "v1")
    other_key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other_key}) as other:
        assert_problem(await other.get(f"/api/v1/datasets/{dataset_id}/versions"), 404)
        freeze_there = await other.post(
            f"/api/v1/datasets/{dataset_id}/versions", json={"name": "v2"}
        )
        assert_problem(freeze_there, 404)
        own = await create_dataset(other)
        run = await other.post(
            "/api/v1/eval-runs", json={"dataset_id": own["id"], "dataset_version": version["id"]}
        )
        assert_problem(run, 404, pointer="/dataset_version")


async def test_a_tagged_run_is_compared_on_the_cases_both_runs_covered(
    client: httpx.AsyncClient,
) -> None:
    dataset_id, _ = await tagged_dataset(client, {"a": ["smoke"], "b": ["smoke"], "c": [], "d": []})
    full = await start(client, dataset_id)
    await post(client, full, {"a": GOOD, "b": GOOD, "c": GOOD, "d": BAD})
    # A smoke run against the full baseline: c and d were never meant to run, so they are not
    # removed cases; a, which broke, is a new failure.
    smoke = await start(client, dataset_id, tags=["smoke"])
    assert smoke["baseline_run_id"] == full["run_id"]
    await post(client, smoke, {"a": BAD, "b": GOOD})
    compared = await compare(client, smoke["run_id"])
    assert compared["counts"]["removed_case"] == 0
    assert compared["counts"]["new_failure"] == 1 and compared["counts"]["still_passing"] == 1
    assert sum(compared["counts"].values()) == 2

    # The other way round: the full run's cases the smoke baseline did not cover are not new.
    again = await start(client, dataset_id, baseline_run_id=smoke["run_id"])
    await post(client, again, {"a": GOOD, "b": GOOD, "c": GOOD, "d": GOOD})
    back = await compare(client, again["run_id"])
    assert back["counts"]["new_case"] == 0
    assert back["counts"]["fixed"] == 1 and back["counts"]["still_passing"] == 1
    assert sum(back["counts"].values()) == 2


async def test_a_case_added_with_the_tag_is_still_a_new_case(client: httpx.AsyncClient) -> None:
    dataset_id, ids = await tagged_dataset(client, {"a": ["smoke"], "b": ["smoke"], "c": []})
    first = await start(client, dataset_id, tags=["smoke"])
    await post(client, first, {"a": GOOD, "b": GOOD})
    await client.post(
        f"/api/v1/datasets/{dataset_id}/test-cases",
        json={"input": "refund n", "checks": [SAYS_DELAY], "tags": ["smoke"]},
    )
    await client.delete(f"/api/v1/test-cases/{ids['b']}")
    second = await start(client, dataset_id, tags=["smoke"])
    await post(client, second, {"a": GOOD, "n": GOOD})
    compared = await compare(client, second["run_id"])
    assert compared["counts"]["new_case"] == 1 and compared["counts"]["removed_case"] == 1
    assert compared["counts"]["still_passing"] == 1
