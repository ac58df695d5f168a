"""Comparing runs through the API: a baseline fixed when a run is created, the buckets of each
case computed over both runs' stored results, and the no_new_failures gate (CI-mode runs
posted here, so the agent's behaviour in each run is exactly what the test says)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.api import create_dataset
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key

SAYS_DELAY = {"type": "output_contains", "value": "3-5 business days", "id": "delay"}
GOOD = "Refunded: 3-5 business days."
BAD = "Sorry, no idea."


async def dataset_with(client: httpx.AsyncClient, names: list[str]) -> tuple[str, dict[str, str]]:
    """A dataset with one case per name (each checks for the delay); its id and case ids."""
    dataset = await create_dataset(client, name="Compared")
    ids = {}
    for name in names:
        created = await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases",
            json={"input": f"refund {name}", "description": name, "checks": [SAYS_DELAY]},
        )
        assert created.status_code == 201, created.text
        ids[name] = created.json()["id"]
    return dataset["id"], ids


async def ci_run(
    client: httpx.AsyncClient, dataset_id: str, replies: dict[str, str], **body: Any
) -> dict[str, Any]:
    """A CI-mode run whose cases (by input) get these replies; the run as created."""
    created = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id, **body})
    assert created.status_code == 201, created.text
    run: dict[str, Any] = created.json()
    if replies:
        await post(client, run, replies)
    return run


async def post(
    client: httpx.AsyncClient, run: dict[str, Any], replies: dict[str, str]
) -> dict[str, Any]:
    by_input = {case["input"]: case["test_case_id"] for case in run["test_cases"]}
    results = [
        {
            "test_case_id": by_input[f"refund {name}"],
            "actual_output": reply,
            "actual_tool_calls": [],
        }
        for name, reply in replies.items()
    ]
    answer = await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def compare(client: httpx.AsyncClient, run_id: str, **params: Any) -> dict[str, Any]:
    answer = await client.get(f"/api/v1/eval-runs/{run_id}/compare", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def test_each_case_lands_in_its_bucket_and_the_gate_counts_new_failures(
    client: httpx.AsyncClient,
) -> None:
    dataset_id, ids = await dataset_with(client, ["a", "b", "c", "d", "e"])
    first = await ci_run(client, dataset_id, {"a": GOOD, "b": GOOD, "c": BAD, "d": BAD, "e": GOOD})
    assert first["baseline_run_id"] is None, "the dataset's first run has nothing to compare with"
    # Between the runs: a case is added, one deleted, and one's check edited.
    added = await client.post(
        f"/api/v1/datasets/{dataset_id}/test-cases",
        json={"input": "refund f", "description": "f", "checks": [SAYS_DELAY]},
    )
    ids["f"] = added.json()["id"]
    assert (await client.delete(f"/api/v1/test-cases/{ids['e']}")).status_code == 204
    edited = {**SAYS_DELAY, "value": "business days"}
    patched = await client.patch(f"/api/v1/test-cases/{ids['d']}", json={"checks": [edited]})
    assert patched.status_code == 200, patched.text

    second = await ci_run(client, dataset_id, {}, gate="no_new_failures")
    assert second["baseline_run_id"] == first["run_id"] and second["gate"] == "no_new_failures"
    answer = await post(client, second, {"a": GOOD, "b": BAD, "c": GOOD, "d": BAD, "f": BAD})
    assert answer["status"] == "completed" and answer["new_failures"] == 1
    assert answer["ci_pass"] is False
    assert answer["ci_fail_reason"] == "1 case that passed in the baseline run no longer passes."

    compared = await compare(client, second["run_id"])
    assert compared["baseline_run_id"] == first["run_id"]
    assert compared["counts"] == {
        "new_failure": 1, "fixed": 1, "still_failing": 1, "still_passing": 1,
        "new_case": 1, "removed_case": 1, "flaky": 0,
    }  # fmt: skip
    buckets = {item["test_case_id"]: item["bucket"] for item in compared["items"]}
    assert buckets == {
        ids["b"]: "new_failure", ids["c"]: "fixed", ids["d"]: "still_failing",
        ids["a"]: "still_passing", ids["f"]: "new_case", ids["e"]: "removed_case",
    }  # fmt: skip
    new_failure = compared["items"][0]
    assert new_failure["test_case_id"] == ids["b"], "new failures come first"
    assert new_failure["changed_checks"] == ["delay"]
    assert new_failure["current"]["actual_output"] == BAD
    assert new_failure["baseline"]["actual_output"] == GOOD
    assert new_failure["revision_changed"] is False
    by_case = {item["test_case_id"]: item for item in compared["items"]}
    assert by_case[ids["d"]]["revision_changed"] is True, "d's check was edited in between"
    assert by_case[ids["e"]]["current"] is None and by_case[ids["f"]]["baseline"] is None


async def test_a_comparison_pages_and_filters_by_bucket(client: httpx.AsyncClient) -> None:
    names = [f"n{n}" for n in range(7)]
    dataset_id, ids = await dataset_with(client, names)
    first = await ci_run(client, dataset_id, dict.fromkeys(names, GOOD))
    second = await ci_run(
        client, dataset_id, {name: BAD if name < "n3" else GOOD for name in names}
    )
    seen: list[str] = []
    cursor = None
    while True:
        page = await compare(
            client, second["run_id"], limit=2, **({"cursor": cursor} if cursor else {})
        )
        seen += [item["test_case_id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids.values()) and len(seen) == 7
    assert seen[:3] == [ids["n0"], ids["n1"], ids["n2"]], "new failures first, in run order"
    fixed_only = await compare(client, second["run_id"], bucket="still_passing")
    assert {item["test_case_id"] for item in fixed_only["items"]} == {ids[n] for n in names[3:]}
    against_itself = await compare(client, first["run_id"], baseline=first["run_id"])
    assert against_itself["counts"]["still_passing"] == 7


async def test_the_baseline_is_fixed_when_the_run_is_created(client: httpx.AsyncClient) -> None:
    dataset_id, _ = await dataset_with(client, ["a"])
    failing = await ci_run(client, dataset_id, {"a": BAD})
    waiting = await ci_run(client, dataset_id, {}, gate="no_new_failures")
    assert waiting["baseline_run_id"] == failing["run_id"]
    # A passing run completes meanwhile: it would be the baseline of a run created now...
    passing = await ci_run(client, dataset_id, {"a": GOOD})
    assert (await ci_run(client, dataset_id, {}))["baseline_run_id"] == passing["run_id"]
    # ...but the waiting run keeps the one it was created with, and its gate with it.
    answer = await post(client, waiting, {"a": BAD})
    assert answer["baseline_run_id"] == failing["run_id"]
    assert answer["new_failures"] == 0 and answer["ci_pass"] is True
    named = await ci_run(client, dataset_id, {}, baseline_run_id=failing["run_id"])
    assert named["baseline_run_id"] == failing["run_id"]


async def test_with_no_baseline_every_case_is_new_and_nothing_is_a_new_failure(
    client: httpx.AsyncClient,
) -> None:
    dataset_id, ids = await dataset_with(client, ["a", "b"])
    run = await ci_run(client, dataset_id, {}, gate="no_new_failures")
    answer = await post(client, run, {"a": BAD, "b": GOOD})
    assert answer["ci_pass"] is True and answer["new_failures"] == 0
    assert answer["pass_rate"] == 0.5, "the pass rate is still reported"
    compared = await compare(client, run["run_id"])
    assert compared["baseline_run_id"] is None
    assert compared["counts"]["new_case"] == 2 and compared["counts"]["new_failure"] == 0
    assert {item["test_case_id"] for item in compared["items"]} == set(ids.values())


async def test_a_result_posted_again_after_completion_changes_the_comparison(
    client: httpx.AsyncClient,
) -> None:
    dataset_id, _ = await dataset_with(client, ["a"])
    await ci_run(client, dataset_id, {"a": GOOD})
    run = await ci_run(client, dataset_id, {"a": BAD}, gate="no_new_failures")
    assert (await compare(client, run["run_id"]))["counts"]["new_failure"] == 1
    fixed = await post(client, run, {"a": GOOD})
    assert fixed["new_failures"] == 0 and fixed["ci_pass"] is True
    assert (await compare(client, run["run_id"]))["counts"]["still_passing"] == 1


async def test_bad_baselines_and_cursors_are_clear_errors(
    client: httpx.AsyncClient, base_url: str, database_url: str
) -> None:
    dataset_id, _ = await dataset_with(client, ["a"])
    other_dataset, _ = await dataset_with(client, ["a"])
    elsewhere = await ci_run(client, other_dataset, {"a": GOOD})
    going_on = await ci_run(client, dataset_id, {})
    for baseline in (elsewhere["run_id"], going_on["run_id"], "not-a-run"):
        refused = await client.post(
            "/api/v1/eval-runs", json={"dataset_id": dataset_id, "baseline_run_id": baseline}
        )
        assert_problem(refused, 422, pointer="/baseline_run_id")
    done = await ci_run(client, dataset_id, {"a": GOOD})
    wrong = await client.get(
        f"/api/v1/eval-runs/{done['run_id']}/compare", params={"baseline": elsewhere["run_id"]}
    )
    assert_problem(wrong, 422, parameter="baseline")
    unfinished = await client.get(
        f"/api/v1/eval-runs/{done['run_id']}/compare", params={"baseline": going_on["run_id"]}
    )
    assert_problem(unfinished, 409)
    forged = await client.get(
        f"/api/v1/eval-runs/{done['run_id']}/compare", params={"cursor": "9.x"}
    )
    assert_problem(forged, 422, parameter="cursor")
    headers = {"x-api-key": await new_project_key(database_url)}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as stranger:
        theirs = await stranger.get(f"/api/v1/eval-runs/{done['run_id']}/compare")
        assert_problem(theirs, 404)
        their_dataset = (await stranger.post("/api/v1/datasets", json={"name": "x"})).json()
        borrowed = await stranger.post(
            "/api/v1/eval-runs",
            json={"dataset_id": their_dataset["id"], "baseline_run_id": done["run_id"]},
        )
        assert_problem(borrowed, 422, pointer="/baseline_run_id")


async def test_flaky_cases_are_those_that_flip_while_the_case_stays_the_same(
    client: httpx.AsyncClient,
) -> None:
    dataset_id, ids = await dataset_with(client, ["a", "b"])
    for reply in (GOOD, BAD, GOOD):
        await ci_run(client, dataset_id, {"a": reply, "b": GOOD})
    flaky = (await client.get(f"/api/v1/datasets/{dataset_id}/flaky")).json()
    assert flaky["items"] == [
        {"test_case_id": ids["a"], "description": "a", "input": "refund a", "runs": 3,
         "passed": 2, "flips": 2, "flip_rate": 0.6667}
    ]  # fmt: skip
    # Editing the case starts its history afresh: the old verdicts were of another case.
    edited = {**SAYS_DELAY, "value": "business days"}
    await client.patch(f"/api/v1/test-cases/{ids['a']}", json={"checks": [edited]})
    await ci_run(client, dataset_id, {"a": GOOD, "b": GOOD})
    assert (await client.get(f"/api/v1/datasets/{dataset_id}/flaky")).json()["items"] == []
    recent = await client.get(f"/api/v1/datasets/{dataset_id}/flaky", params={"runs": 1})
    assert_problem(recent, 422, parameter="runs")
