"""CI mode through HTTP: create a run, post what the agent did, read the gate."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.api import create_case, create_dataset
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key


@pytest.fixture
def base_url(api_process_url: str) -> str:
    """This loop runs against `agentlasso api` as its own process, as a CI job would meet it."""
    return api_process_url


REFUND_CHECKS = [
    {"type": "tool_called", "tool": "stripe.refund"},
    {"type": "output_contains", "value": "3-5 business days"},
    {"type": "output_not_contains", "value": "guarantee", "severity": "minor"},
]
GOOD = {
    "actual_output": "Your refund is on its way: 3-5 business days.",
    "actual_tool_calls": [{"name": "orders.lookup"}, {"name": "stripe.refund", "arguments": "{}"}],
}
BAD = {"actual_output": "I guarantee a refund soon.", "actual_tool_calls": []}
NUL = "\x00"  # PostgreSQL text cannot hold it; a reply may


async def dataset_with_cases(
    client: httpx.AsyncClient, cases: list[dict[str, Any]], **fields: Any
) -> str:
    dataset = await create_dataset(client, **fields)
    for case in cases:
        response = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
        assert response.status_code == 201, response.text
    return str(dataset["id"])


async def start_run(client: httpx.AsyncClient, dataset_id: str, **fields: Any) -> dict[str, Any]:
    response = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id, **fields})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def post_results(
    client: httpx.AsyncClient, run_id: str, results: list[dict[str, Any]]
) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/eval-run-results", json={"run_id": run_id, "results": results}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def refund_cases(count: int) -> list[dict[str, Any]]:
    return [{"input": f"refund order {n}", "checks": REFUND_CHECKS} for n in range(count)]


async def test_create_lists_cases_exactly_as_the_contract_says(client: httpx.AsyncClient) -> None:
    legacy = {"input": "old", "evaluation_criteria_json": {"expected_tool_calls": ["a.b"]}}
    dataset_id = await dataset_with_cases(
        client, [*refund_cases(1), legacy], data_context={"region": "eu"}
    )
    run = await start_run(client, dataset_id)
    assert run["status"] == "awaiting_results"
    assert run["pass_threshold"] == 1.0 and run["total"] == 2
    first, second = run["test_cases"]
    assert set(first) >= {
        "test_case_id", "input", "evaluation_criteria_json", "checks_version", "checks",
        "expected_output", "evaluation_type", "min_confidence", "data_context",
    }  # fmt: skip
    assert first["data_context"] == {"region": "eu"}
    assert [c["type"] for c in first["checks"]] == [c["type"] for c in REFUND_CHECKS]
    # an older case lists the checks it will be graded by, read from its criteria
    assert second["checks"] == [
        {"type": "tool_called", "id": second["checks"][0]["id"], "tool": "a.b",
         "severity": "critical"}
    ]  # fmt: skip
    assert second["evaluation_criteria_json"] == legacy["evaluation_criteria_json"]


async def test_a_passing_run(client: httpx.AsyncClient) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(3)))
    answer = await post_results(
        client,
        run["run_id"],
        [{"test_case_id": c["test_case_id"], **GOOD} for c in run["test_cases"]],
    )
    assert answer["status"] == "completed"
    assert answer["ci_pass"] is True and answer["pass_rate"] == 1.0
    assert answer["ci_fail_reason"] is None
    assert answer["counts"] == {
        "total": 3, "done": 3, "graded": 3, "passed": 3, "failed": 0, "not_graded": 0, "errored": 0
    }  # fmt: skip
    assert [r["pass_fail"] for r in answer["results"]] == [True, True, True]
    assert answer["results"][0]["judge_reasoning"].startswith("3/3 checks passed")


async def test_a_failing_run_says_why(client: httpx.AsyncClient) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(2)))
    cases = run["test_cases"]
    answer = await post_results(
        client,
        run["run_id"],
        [{"test_case_id": cases[0]["test_case_id"], **GOOD},
         {"test_case_id": cases[1]["test_case_id"], **BAD}],
    )  # fmt: skip
    assert answer["ci_pass"] is False and answer["pass_rate"] == 0.5
    assert answer["ci_fail_reason"] == (
        "Pass rate 50.0% is below the threshold 100.0%: 1 of 2 graded cases failed."
    )
    failed = answer["results"][1]
    details = {c["id"]: c["detail"] for c in failed["check_results"]}
    assert details["c1"] == "stripe.refund was never called. The agent called no tools."
    assert "guarantee" in details["c3"]


async def test_threshold_half_passes_with_one_failure_in_two(client: httpx.AsyncClient) -> None:
    run = await start_run(
        client, await dataset_with_cases(client, refund_cases(2)), pass_threshold=0.5
    )
    cases = run["test_cases"]
    answer = await post_results(
        client,
        run["run_id"],
        [{"test_case_id": cases[0]["test_case_id"], **GOOD},
         {"test_case_id": cases[1]["test_case_id"], **BAD}],
    )  # fmt: skip
    assert answer["pass_threshold"] == 0.5
    assert answer["ci_pass"] is True and answer["pass_rate"] == 0.5


async def test_a_dataset_with_no_checks_never_passes(client: httpx.AsyncClient) -> None:
    dataset_id = await dataset_with_cases(client, [{"input": "a"}, {"input": "b", "checks": []}])
    run = await start_run(client, dataset_id)
    answer = await post_results(
        client,
        run["run_id"],
        [{"test_case_id": c["test_case_id"], "actual_output": "hi"} for c in run["test_cases"]],
    )
    assert answer["pass_rate"] is None and answer["ci_pass"] is False
    assert answer["ci_fail_reason"] == "No test case was graded: 2 cases have no checks."
    assert [r["graded"] for r in answer["results"]] == [False, False]


async def test_a_missing_reply_fails_reply_checks_instead_of_passing(
    client: httpx.AsyncClient,
) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(1)))
    case_id = run["test_cases"][0]["test_case_id"]
    answer = await post_results(
        client,
        run["run_id"],
        [{"test_case_id": case_id, "actual_tool_calls": [{"name": "stripe.refund"}]}],
    )
    result = answer["results"][0]
    assert result["pass_fail"] is False and answer["ci_pass"] is False
    by_id = {c["id"]: c for c in result["check_results"]}
    assert by_id["c1"]["passed"] is True
    assert by_id["c2"]["passed"] is False and "not reported" in by_id["c2"]["detail"]


async def test_an_empty_reply_is_a_reply(client: httpx.AsyncClient) -> None:
    checks = [{"type": "output_not_contains", "value": "guarantee"}]
    run = await start_run(
        client, await dataset_with_cases(client, [{"input": "x", "checks": checks}])
    )
    case_id = run["test_cases"][0]["test_case_id"]
    answer = await post_results(
        client, run["run_id"], [{"test_case_id": case_id, "actual_output": ""}]
    )
    assert answer["results"][0]["pass_fail"] is True and answer["ci_pass"] is True


async def test_judge_checks_are_not_graded_without_a_judge(client: httpx.AsyncClient) -> None:
    case = {
        "input": "refund",
        "checks": [{"type": "output_contains", "value": "refund"},
                   {"type": "llm_judge", "criterion": "States the refund amount"}],
    }  # fmt: skip
    run = await start_run(client, await dataset_with_cases(client, [case]))
    case_id = run["test_cases"][0]["test_case_id"]
    answer = await post_results(
        client, run["run_id"], [{"test_case_id": case_id, "actual_output": "refund of $20"}]
    )
    result = answer["results"][0]
    judge = result["check_results"][1]
    assert judge["status"] == "not_graded" and judge["passed"] is None
    assert "no judge is configured" in judge["detail"]
    assert result["pass_fail"] is False and result["partially_graded"] is True
    assert answer["ci_pass"] is False


async def test_several_batches_then_complete(client: httpx.AsyncClient) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(5)))
    ids = [c["test_case_id"] for c in run["test_cases"]]
    first = await post_results(
        client, run["run_id"], [{"test_case_id": i, **GOOD} for i in ids[:2]]
    )
    assert first["status"] == "awaiting_results" and first["ci_pass"] is False
    assert first["ci_fail_reason"] == (
        "Not every test case has a result: 3 of 5 cases have no result yet."
    )
    assert len(first["results"]) == 2
    second = await post_results(
        client, run["run_id"], [{"test_case_id": i, **GOOD} for i in ids[2:]]
    )
    assert second["status"] == "completed" and second["ci_pass"] is True
    assert second["counts"]["done"] == 5


async def test_a_case_posted_again_replaces_its_result(client: httpx.AsyncClient) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(2)))
    ids = [c["test_case_id"] for c in run["test_cases"]]
    failing = await post_results(
        client, run["run_id"], [{"test_case_id": ids[0], **BAD}, {"test_case_id": ids[1], **GOOD}]
    )
    assert failing["ci_pass"] is False and failing["counts"]["failed"] == 1
    fixed = await post_results(client, run["run_id"], [{"test_case_id": ids[0], **GOOD}])
    assert fixed["ci_pass"] is True
    assert fixed["counts"] == {
        "total": 2, "done": 2, "graded": 2, "passed": 2, "failed": 0, "not_graded": 0, "errored": 0
    }  # fmt: skip
    stored = (await client.get(f"/api/v1/eval-runs/{run['run_id']}/results")).json()["items"]
    assert len(stored) == 2 and all(item["outcome"] == "passed" for item in stored)


async def test_idempotent_retry_returns_the_same_run(client: httpx.AsyncClient) -> None:
    dataset_id = await dataset_with_cases(client, refund_cases(2))
    headers = {"Idempotency-Key": "build-4711"}
    body = {"dataset_id": dataset_id, "pass_threshold": 0.9}
    first = await client.post("/api/v1/eval-runs", json=body, headers=headers)
    again = await client.post("/api/v1/eval-runs", json=body, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    other = await client.post(
        "/api/v1/eval-runs", json={**body, "pass_threshold": 0.5}, headers=headers
    )
    assert "different request" in assert_problem(other, 409)["detail"]
    runs = (await client.get("/api/v1/eval-runs", params={"dataset_id": dataset_id})).json()
    assert len(runs["items"]) == 1


async def test_a_run_pins_revisions(client: httpx.AsyncClient) -> None:
    dataset_id = await dataset_with_cases(client, refund_cases(1))
    run = await start_run(client, dataset_id)
    case_id = run["test_cases"][0]["test_case_id"]
    edited = await client.patch(
        f"/api/v1/test-cases/{case_id}",
        json={"checks": [{"type": "output_contains", "value": "zzz"}]},
    )
    assert edited.status_code == 200
    answer = await post_results(client, run["run_id"], [{"test_case_id": case_id, **GOOD}])
    assert answer["ci_pass"] is True, "graded against the revision the run pinned"
    assert len(answer["results"][0]["check_results"]) == 3


async def test_unknown_and_duplicate_cases_are_422_naming_them(client: httpx.AsyncClient) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(2)))
    ids = [c["test_case_id"] for c in run["test_cases"]]
    url = "/api/v1/eval-run-results"
    twice = {
        "run_id": run["run_id"],
        "results": [{"test_case_id": ids[0]}, {"test_case_id": ids[0]}],
    }
    assert_problem(await client.post(url, json=twice), 422, pointer="/results/1/test_case_id")
    stranger = "00000000-0000-0000-0000-000000000001"
    unknown = {"run_id": run["run_id"], "results": [{"test_case_id": ids[0]},
               {"test_case_id": stranger}, {"test_case_id": "nope"}]}  # fmt: skip
    problem = assert_problem(await client.post(url, json=unknown), 422)
    assert [e["pointer"] for e in problem["errors"]] == [
        "/results/1/test_case_id",
        "/results/2/test_case_id",
    ]
    assert stranger in problem["errors"][0]["detail"]
    run_now = (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()
    assert run_now["counts"]["done"] == 0, "a rejected batch stores nothing"


async def test_bad_result_bodies(client: httpx.AsyncClient) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(1)))
    url = "/api/v1/eval-run-results"
    assert_problem(await client.post(url, json={"run_id": run["run_id"], "results": "x"}), 422,
                   pointer="/results")  # fmt: skip
    assert_problem(await client.post(url, json={"results": []}), 422, pointer="/run_id")
    bad_calls = {"run_id": run["run_id"], "results": [{"test_case_id": "x", "extra": 1}]}
    assert_problem(await client.post(url, json=bad_calls), 422, pointer="/results/0/extra")
    assert_problem(await client.post("/api/v1/eval-runs", json={"dataset_id": "x",
                   "pass_threshold": 1.5}), 422, pointer="/pass_threshold")  # fmt: skip
    # An id the body names that is no object of the project's: not found, naming the field.
    assert_problem(await client.post("/api/v1/eval-runs", json={"dataset_id": "nope"}), 404,
                   pointer="/dataset_id")  # fmt: skip
    dataset_id = await dataset_with_cases(client, refund_cases(1))
    trials = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id, "trials": 3})
    assert_problem(trials, 422, pointer="/trials")


async def test_a_results_body_over_the_limit_is_413(client: httpx.AsyncClient) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(1)))
    case_id = run["test_cases"][0]["test_case_id"]
    reply = "x" * (33 * 1024 * 1024)
    response = await client.post(
        "/api/v1/eval-run-results",
        json={
            "run_id": run["run_id"],
            "results": [{"test_case_id": case_id, "actual_output": reply}],
        },
    )
    problem = assert_problem(response, 413)
    assert "batches" in problem["detail"]


async def test_another_projects_run_is_404(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient, database_url: str
) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(1)))
    case_id = run["test_cases"][0]["test_case_id"]
    other = {"x-api-key": await new_project_key(database_url)}
    body = {"run_id": run["run_id"], "results": [{"test_case_id": case_id, **GOOD}]}
    assert_problem(await anonymous.post("/api/v1/eval-run-results", json=body, headers=other), 404)
    for url in (f"/api/v1/eval-runs/{run['run_id']}", f"/api/v1/eval-runs/{run['run_id']}/results"):
        assert_problem(await anonymous.get(url, headers=other), 404)
    cancel = await anonymous.post(f"/api/v1/eval-runs/{run['run_id']}/cancel", headers=other)
    assert_problem(cancel, 404)


async def test_a_cancelled_run_takes_no_results(client: httpx.AsyncClient) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(2)))
    ids = [c["test_case_id"] for c in run["test_cases"]]
    await post_results(client, run["run_id"], [{"test_case_id": ids[0], **GOOD}])
    cancelled = (await client.post(f"/api/v1/eval-runs/{run['run_id']}/cancel")).json()
    assert cancelled["status"] == "cancelled" and cancelled["ci_pass"] is False
    assert cancelled["counts"]["done"] == 1, "results so far are kept"
    response = await client.post(
        "/api/v1/eval-run-results",
        json={"run_id": run["run_id"], "results": [{"test_case_id": ids[1], **GOOD}]},
    )
    assert_problem(response, 409)


async def test_results_pages_filter_by_outcome_with_what_the_agent_did(
    client: httpx.AsyncClient,
) -> None:
    run = await start_run(client, await dataset_with_cases(client, refund_cases(5)))
    ids = [c["test_case_id"] for c in run["test_cases"]]
    posted = [{"test_case_id": i, **(BAD if n % 2 else GOOD)} for n, i in enumerate(ids)]
    posted[4] = {"test_case_id": ids[4], "actual_output": None, "actual_tool_calls": []}
    await post_results(client, run["run_id"], posted)
    url = f"/api/v1/eval-runs/{run['run_id']}/results"
    failed = (await client.get(url, params={"outcome": "failed"})).json()["items"]
    assert [item["test_case_id"] for item in failed] == [ids[1], ids[3], ids[4]]
    assert failed[0]["actual_output"] == BAD["actual_output"]
    assert failed[0]["actual_tool_calls"] == []
    assert failed[2]["actual_output"] is None
    pages, cursor, seen = 0, None, []
    while True:
        params: dict[str, Any] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = (await client.get(url, params=params)).json()
        seen += [item["test_case_id"] for item in page["items"]]
        pages, cursor = pages + 1, page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids and pages == 3
    assert_problem(await client.get(url, params={"outcome": "meh"}), 422, parameter="outcome")


async def test_runs_list_newest_first_with_filters(client: httpx.AsyncClient) -> None:
    first_dataset = await dataset_with_cases(client, refund_cases(1))
    second_dataset = await dataset_with_cases(client, [])
    older = await start_run(client, first_dataset)
    newer = await start_run(client, first_dataset)
    empty = await start_run(client, second_dataset)
    listed = (await client.get("/api/v1/eval-runs")).json()["items"]
    assert [r["run_id"] for r in listed] == [empty["run_id"], newer["run_id"], older["run_id"]]
    by_dataset = (
        await client.get("/api/v1/eval-runs", params={"dataset_id": first_dataset})
    ).json()
    assert [r["run_id"] for r in by_dataset["items"]] == [newer["run_id"], older["run_id"]]
    completed = (await client.get("/api/v1/eval-runs", params={"status": "completed"})).json()
    assert [r["run_id"] for r in completed["items"]] == [empty["run_id"]]
    assert completed["items"][0]["ci_fail_reason"] == (
        "No test case was graded: the run has no test cases."
    )


@pytest.mark.parametrize("threshold", [0, 1])
async def test_threshold_bounds_are_accepted(client: httpx.AsyncClient, threshold: int) -> None:
    run = await start_run(
        client, await dataset_with_cases(client, refund_cases(1)), pass_threshold=threshold
    )
    assert run["pass_threshold"] == threshold


async def test_a_reply_holding_nul_is_stored_faithfully_and_graded(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    checks = [{"type": "output_contains", "value": "refund"}, {"type": "tool_called", "tool": "t"}]
    case = await create_case(client, dataset["id"], checks=checks)
    run = await start_run(client, dataset_id=dataset["id"])
    reply = f"your refund{NUL}is on its way"
    calls = [{"name": "t", "arguments": {f"k{NUL}": f"v{NUL}"}}]
    posted = await client.post(
        "/api/v1/eval-run-results",
        json={
            "run_id": run["run_id"],
            "results": [
                {"test_case_id": case["id"], "actual_output": reply, "actual_tool_calls": calls}
            ],
        },
    )
    # Before: PostgreSQL refused the NUL and the batch was a 500.
    assert posted.status_code == 200, posted.text
    assert posted.json()["results"][0]["pass_fail"] is True
    stored = (await client.get(f"/api/v1/eval-runs/{run['run_id']}/results")).json()["items"]
    assert stored[0]["actual_output"] == reply
    assert stored[0]["actual_tool_calls"] == calls
