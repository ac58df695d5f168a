"""The AI judge in both modes, against a fake Anthropic API: verdicts, 202, cache, outages."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from agentlasso.config import Settings
from tests.support.api import (
    FINAL,
    all_results,
    create_dataset,
    register_agent,
    run_now,
    start_run,
    wait_final,
)
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key
from tests.support.fake_agent import FakeAgentServer
from tests.support.fake_anthropic import (
    FAKE_API_KEY,
    FakeAnthropic,
    failed,
    scored,
    server_error,
)
from tests.support.processes import WorkerProcesses, api_process
from tests.support.waiting import eventually

JUDGE_CHECKS = [
    {"type": "output_contains", "value": "refund"},
    {"type": "llm_judge", "criterion": "States the refund amount"},
]


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def judge_env(settings: Settings, fake: FakeAnthropic, key: str = FAKE_API_KEY) -> dict[str, str]:
    return {
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
        "ANTHROPIC_API_KEY": key,
        "ANTHROPIC_BASE_URL": fake.base_url,
        "AGENTLASSO_JUDGE_MODEL": "claude-sonnet-5-5",
        "AGENTLASSO_JUDGE_RETRY_AFTER_CAP_S": "1",
        "AGENTLASSO_JUDGE_TIMEOUT_S": "5",
    }


@contextlib.asynccontextmanager
async def judging_platform(
    settings: Settings, api_key: str, workers: WorkerProcesses, env: dict[str, str]
) -> AsyncIterator[httpx.AsyncClient]:
    """An API process and a worker, both with the judge configured; a client of the API."""
    with api_process(settings.database_url, settings.redis_url, env) as (base_url, _pid):
        workers.start(extra_env=env)
        async with httpx.AsyncClient(
            base_url=base_url, headers={"x-api-key": api_key}, timeout=120
        ) as client:
            yield client


async def judged_dataset(client: httpx.AsyncClient, cases: list[dict[str, Any]]) -> str:
    dataset = await create_dataset(client, data_context={"currency": "EUR"})
    for case in cases:
        created = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
        assert created.status_code == 201, created.text
    return str(dataset["id"])


async def ci_run_with(
    client: httpx.AsyncClient,
    dataset_id: str,
    reply: str,
    headers: dict[str, str] | None = None,
    **run: Any,
) -> httpx.Response:
    created = (
        await client.post(
            "/api/v1/eval-runs", json={"dataset_id": dataset_id, **run}, headers=headers
        )
    ).json()
    results = [
        {"test_case_id": case["test_case_id"], "actual_output": reply, "actual_tool_calls": []}
        for case in created["test_cases"]
    ]
    return await client.post(
        "/api/v1/eval-run-results",
        json={"run_id": created["run_id"], "results": results},
        headers=headers,
    )


async def test_ci_mode_waits_for_verdicts_and_answers_with_them(
    settings: Settings, api_key: str, workers: WorkerProcesses, anthropic: FakeAnthropic
) -> None:
    async with judging_platform(
        settings, api_key, workers, judge_env(settings, anthropic)
    ) as client:
        dataset_id = await judged_dataset(client, [{"input": "refund?", "checks": JUDGE_CHECKS}])
        response = await ci_run_with(client, dataset_id, "Your refund of 20 EUR is on its way.")
        assert response.status_code == 200, response.text
        answer = response.json()
        result = answer["results"][0]
        judge = result["check_results"][1]
        assert judge["status"] == "passed" and judge["reasoning"]
        assert result["pass_fail"] is True and answer["ci_pass"] is True
        assert answer["status"] == "completed"
        run = (await client.get(f"/api/v1/eval-runs/{answer['run_id']}")).json()
        assert run["judge"]["calls"] == 1 and run["judge"]["cost_usd"] > 0
        (stored,) = await all_results(client, answer["run_id"])
        record = stored["judge"][0]
        assert record["model"] == "claude-sonnet-5-5" and record.get("cached") is not True
        assert record["usage"]["input_tokens"] > 0
    sent = anthropic.requests[0]
    assert "Your refund of 20 EUR" in sent.prompt_text and "EUR" in sent.prompt_text


async def test_a_failing_verdict_fails_the_case_with_the_judges_reasoning(
    settings: Settings, api_key: str, workers: WorkerProcesses, anthropic: FakeAnthropic
) -> None:
    anthropic.script(failed("It never states the amount."))
    async with judging_platform(
        settings, api_key, workers, judge_env(settings, anthropic)
    ) as client:
        dataset_id = await judged_dataset(client, [{"input": "refund?", "checks": JUDGE_CHECKS}])
        answer = (await ci_run_with(client, dataset_id, "Your refund is on its way.")).json()
    judge = answer["results"][0]["check_results"][1]
    assert judge["status"] == "failed" and judge["reasoning"] == "It never states the amount."
    assert answer["ci_pass"] is False


async def test_an_identical_request_is_answered_from_the_cache_unless_bypassed(
    settings: Settings, api_key: str, workers: WorkerProcesses, anthropic: FakeAnthropic
) -> None:
    async with judging_platform(
        settings, api_key, workers, judge_env(settings, anthropic)
    ) as client:
        dataset_id = await judged_dataset(client, [{"input": "refund?", "checks": JUDGE_CHECKS}])
        reply = "Refund of 31 EUR sent (cache test)."
        first = (await ci_run_with(client, dataset_id, reply)).json()
        second = (await ci_run_with(client, dataset_id, reply)).json()
        assert len(anthropic.requests) == 1, "the second identical run never reached the judge"
        run = (await client.get(f"/api/v1/eval-runs/{second['run_id']}")).json()
        assert run["judge"]["cached"] == 1 and run["judge"]["calls"] == 0
        (stored,) = await all_results(client, second["run_id"])
        assert stored["judge"][0]["cached"] is True
        assert second["results"][0]["pass_fail"] == first["results"][0]["pass_fail"] is True
        bypass = await ci_run_with(client, dataset_id, reply, judge_cache=False)
        assert bypass.status_code == 200
        assert len(anthropic.requests) == 2, "judge_cache false asks the judge again"


async def test_ci_mode_answers_202_when_the_judge_is_slow_then_the_run_completes(
    settings: Settings, api_key: str, workers: WorkerProcesses
) -> None:
    with FakeAnthropic(latency_s=3) as slow:
        env = judge_env(settings, slow)
        async with judging_platform(settings, api_key, workers, env) as client:
            dataset_id = await judged_dataset(client, [{"input": "x", "checks": JUDGE_CHECKS}])
            created = (
                await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})
            ).json()
            case_id = created["test_cases"][0]["test_case_id"]
            response = await client.post(
                "/api/v1/eval-run-results",
                json={"run_id": created["run_id"], "wait_s": 0.5,
                      "results": [{"test_case_id": case_id, "actual_output": "refund 9 EUR"}]},
            )  # fmt: skip
            assert response.status_code == 202, response.text
            waiting = response.json()
            assert waiting["status"] == "grading" and waiting["ci_pass"] is False
            assert "AI judge has not finished" in waiting["ci_fail_reason"]
            final = await wait_final(client, created["run_id"])
            assert final["status"] == "completed" and final["ci_pass"] is True


async def test_a_judge_outage_is_not_graded_and_never_passes(
    settings: Settings, api_key: str, workers: WorkerProcesses, anthropic: FakeAnthropic
) -> None:
    anthropic.script(*[server_error()] * 3)
    async with judging_platform(
        settings, api_key, workers, judge_env(settings, anthropic)
    ) as client:
        dataset_id = await judged_dataset(client, [{"input": "refund?", "checks": JUDGE_CHECKS}])
        answer = (await ci_run_with(client, dataset_id, "refund of 20 EUR")).json()
    result = answer["results"][0]
    judge = result["check_results"][1]
    assert judge["status"] == "not_graded" and judge["passed"] is None
    assert "unavailable" in judge["detail"]
    assert result["pass_fail"] is False and result["partially_graded"] is True
    assert answer["status"] == "completed" and answer["ci_pass"] is False


async def test_a_refused_key_stops_judging_for_the_run(
    settings: Settings, api_key: str, workers: WorkerProcesses, anthropic: FakeAnthropic
) -> None:
    env = judge_env(settings, anthropic, key="sk-ant-wrong")
    async with judging_platform(settings, api_key, workers, env) as client:
        cases = [{"input": f"refund {n}?", "checks": JUDGE_CHECKS} for n in range(12)]
        dataset_id = await judged_dataset(client, cases)
        answer = (await ci_run_with(client, dataset_id, "refund of 20 EUR")).json()
        run = (await client.get(f"/api/v1/eval-runs/{answer['run_id']}")).json()
    assert run["judge"]["stopped"] and "401" in run["judge"]["stopped"]
    assert len(anthropic.requests) < 12, "later cases are not sent once the key is refused"
    details = [r["check_results"][1]["detail"] for r in answer["results"]]
    assert all("refused" in detail for detail in details), details
    assert answer["ci_pass"] is False


async def test_server_mode_goes_through_grading_and_repeats_near_the_floor(
    settings: Settings,
    api_key: str,
    workers: WorkerProcesses,
    anthropic: FakeAnthropic,
    fake_agent: FakeAgentServer,
) -> None:
    anthropic.when("near the floor", scored(72), scored(65), scored(75))
    anthropic.latency_s = 0.5  # the run then sits in `grading` long enough to be seen there
    async with judging_platform(
        settings, api_key, workers, judge_env(settings, anthropic)
    ) as client:
        agent_id = await register_agent(client, fake_agent.url)
        near = {"input": "refund near the floor", "expected_output": "near the floor: refund",
                "evaluation_type": "SCORE", "min_confidence": 70, "checks": []}  # fmt: skip
        judged = {"input": "refund please", "checks": JUDGE_CHECKS}
        dataset_id = await judged_dataset(client, [near, judged])
        run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
        statuses = set()
        grading: dict[str, Any] = {}

        async def finished() -> dict[str, Any] | None:
            nonlocal grading
            current = await run_now(client, run["run_id"])
            if current["status"] in FINAL:
                return current
            statuses.add(current["status"])
            if current["status"] == "grading":
                grading = current
            return None

        current = await eventually(finished, 60, what="the run finishing", every_s=0.02)
        results = await all_results(client, run["run_id"])
    assert current["counts"]["done"] == 2 and current["judge"]["pending"] == 0
    near_result = next(r for r in results if r["check_results"][0]["id"] == "expectation")
    record = near_result["judge"][0]
    # The first judgement comes first; the two repeats run at once, in either order.
    assert record["samples"][0] == 0.72 and sorted(record["samples"]) == [0.65, 0.72, 0.75]
    assert record["flaky"] is True
    assert near_result["check_results"][0]["score"] == 0.72 and near_result["pass_fail"] is True
    assert current["ci_pass"] is True
    assert statuses <= {"queued", "running", "grading"}
    # Every agent call done, verdicts still coming: the run waits in `grading`, not passing.
    assert grading, f"the run was never seen grading: {statuses}"
    assert grading["counts"]["done"] == 2 and grading["judge"]["pending"] >= 1
    assert grading["ci_pass"] is False and "AI judge has not finished" in grading["ci_fail_reason"]


async def test_a_worker_without_a_judge_key_settles_the_cases_instead_of_waiting(
    settings: Settings, api_key: str, workers: WorkerProcesses, anthropic: FakeAnthropic
) -> None:
    api_env = judge_env(settings, anthropic)
    worker_env = {name: value for name, value in api_env.items() if name != "ANTHROPIC_API_KEY"}
    with api_process(settings.database_url, settings.redis_url, api_env) as (base_url, _pid):
        workers.start(extra_env={**worker_env, "ANTHROPIC_API_KEY": ""})
        async with httpx.AsyncClient(
            base_url=base_url, headers={"x-api-key": api_key}, timeout=120
        ) as client:
            dataset_id = await judged_dataset(client, [{"input": "x", "checks": JUDGE_CHECKS}])
            response = await ci_run_with(client, dataset_id, "refund of 20 EUR")
    assert response.status_code == 200, response.text
    answer = response.json()
    judge = answer["results"][0]["check_results"][1]
    assert judge["status"] == "not_graded" and "no judge is configured" in judge["detail"]
    assert answer["status"] == "completed" and answer["ci_pass"] is False
    assert anthropic.requests == []


async def test_judging_lost_with_a_killed_worker_is_redone_and_the_run_completes(
    settings: Settings, api_key: str, workers: WorkerProcesses, anthropic: FakeAnthropic
) -> None:
    # Before: the reaper only looked at runs that were queued or running, so a judge chunk of a
    # run awaiting results or grading was never found again, and the run never ended.
    anthropic.latency_s = 6.0  # the worker is killed while its judge call is in flight
    env = {**judge_env(settings, anthropic), "AGENTLASSO_JUDGE_TIMEOUT_S": "30"}
    async with judging_platform(settings, api_key, workers, env) as client:
        first = workers.processes[0]
        dataset_id = await judged_dataset(client, [{"input": "refund?", "checks": JUDGE_CHECKS}])
        created = (await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})).json()
        [case] = created["test_cases"]
        result = {"test_case_id": case["test_case_id"], "actual_output": "Refund: 20 EUR."}
        posted = await client.post(
            "/api/v1/eval-run-results",
            json={"run_id": created["run_id"], "results": [result], "wait_s": 0.5},
        )
        assert posted.status_code == 202, posted.text

        async def judge_asked() -> bool:
            return bool(anthropic.requests)

        await eventually(judge_asked, 30, what="the first judge call")
        first.kill()
        first.wait()
        workers.start(extra_env=env)
        final = await wait_final(client, created["run_id"], wait_s=60)
    assert final["status"] == "completed", final
    assert final["judge"]["pending"] == 0 and final["ci_pass"] is True


# --- Spend and tenancy: a project's own key, the cut inputs, the cache per project ------------


def no_server_key_env(settings: Settings, fake: FakeAnthropic) -> dict[str, str]:
    """A platform whose server has no judge key: only projects that bring one are judged."""
    env = judge_env(settings, fake)
    del env["ANTHROPIC_API_KEY"]
    return env


async def test_a_projects_own_key_judges_its_runs_and_no_one_elses(
    settings: Settings, api_key: str, workers: WorkerProcesses, database_url: str
) -> None:
    with FakeAnthropic(api_key="sk-ant-the-projects-own") as own:
        env = no_server_key_env(settings, own)
        async with judging_platform(settings, api_key, workers, env) as client:
            before = (await client.get("/api/v1/judge-settings")).json()
            set_key = await client.patch(
                "/api/v1/judge-settings",
                json={"anthropic_api_key": "sk-ant-the-projects-own", "model": "claude-haiku-4-5"},
            )
            dataset_id = await judged_dataset(
                client, [{"input": "refund?", "checks": JUDGE_CHECKS}]
            )
            judged = await ci_run_with(client, dataset_id, "Your refund of 20 EUR is on its way.")
            other_key = await new_project_key(database_url)
            other = await ci_run_with(
                client, await judged_dataset_of(client, other_key), "refund",
                headers={"x-api-key": other_key},
            )  # fmt: skip
    assert before["anthropic_api_key_set"] is False and before["judge_configured"] is False
    shown = set_key.json()
    assert shown == {
        "anthropic_api_key_set": True, "model": "claude-haiku-4-5", "server_key_set": False,
        "effective_model": "claude-haiku-4-5", "judge_configured": True,
        "doubted_judge_not_graded": False,
    }  # fmt: skip
    assert "sk-ant" not in set_key.text
    result = judged.json()["results"][0]
    assert judged.status_code == 200 and result["check_results"][1]["status"] == "passed"
    assert own.requests[0].body is not None and own.requests[0].body["model"] == "claude-haiku-4-5"
    assert len(own.requests) == 1, "the other project's case never reached this key"
    other_check = other.json()["results"][0]["check_results"][1]
    assert (
        other_check["status"] == "not_graded" and "no judge is configured" in other_check["detail"]
    )


async def judged_dataset_of(client: httpx.AsyncClient, key: str) -> str:
    dataset = await client.post(
        "/api/v1/datasets", json={"name": "other"}, headers={"x-api-key": key}
    )
    created = await client.post(
        f"/api/v1/datasets/{dataset.json()['id']}/test-cases",
        json={"input": "refund?", "checks": JUDGE_CHECKS},
        headers={"x-api-key": key},
    )
    assert created.status_code == 201
    return str(dataset.json()["id"])


async def test_judge_settings_refuse_what_cannot_be_used(client: httpx.AsyncClient) -> None:
    bad_model = await client.patch("/api/v1/judge-settings", json={"model": "gpt-9"})
    assert_problem(bad_model, 422, pointer="/model")
    bad_key = await client.patch("/api/v1/judge-settings", json={"anthropic_api_key": "sk ant"})
    assert_problem(bad_key, 422, pointer="/anthropic_api_key")
    await client.patch("/api/v1/judge-settings", json={"anthropic_api_key": "sk-ant-1"})
    removed = await client.patch("/api/v1/judge-settings", json={"anthropic_api_key": None})
    assert removed.json()["anthropic_api_key_set"] is False


async def test_the_judge_is_shown_a_cut_reply_and_the_verdict_says_so(
    settings: Settings, api_key: str, workers: WorkerProcesses, anthropic: FakeAnthropic
) -> None:
    env = {**judge_env(settings, anthropic), "AGENTLASSO_JUDGE_MAX_INPUT_CHARS": "100"}
    reply = "refund " + "x" * 500 + " THE-TAIL"
    async with judging_platform(settings, api_key, workers, env) as client:
        dataset_id = await judged_dataset(client, [{"input": "refund?", "checks": JUDGE_CHECKS}])
        answer = (await ci_run_with(client, dataset_id, reply)).json()
        (stored,) = await all_results(client, answer["run_id"])
    assert "THE-TAIL" not in anthropic.requests[0].prompt_text
    assert "refund " + "x" * 93 in anthropic.requests[0].prompt_text
    reasoning = answer["results"][0]["check_results"][1]["reasoning"]
    assert reasoning.endswith(
        "(The judge was shown only the start of the reply (100 of 516 characters).)"
    )
    assert stored["judge"][0]["truncated"] == ["the reply (100 of 516 characters)"]


async def test_a_cached_verdict_never_crosses_projects(
    settings: Settings, api_key: str, workers: WorkerProcesses, anthropic: FakeAnthropic,
    database_url: str,
) -> None:  # fmt: skip
    other_key = await new_project_key(database_url)
    async with judging_platform(
        settings, api_key, workers, judge_env(settings, anthropic)
    ) as client:
        mine = await judged_dataset(client, [{"input": "refund?", "checks": JUDGE_CHECKS}])
        await ci_run_with(client, mine, "refund of 20 EUR")
        again = (await ci_run_with(client, mine, "refund of 20 EUR")).json()
        theirs = await judged_dataset_of(client, other_key)
        other = await ci_run_with(
            client, theirs, "refund of 20 EUR", headers={"x-api-key": other_key}
        )
    # Before: one global cache told the second project, by a free cached verdict, what the
    # first had asked.
    assert len(anthropic.requests) == 2
    assert again["judge"]["cached"] == 1
    assert other.json()["judge"]["cached"] == 0 and other.json()["judge"]["calls"] == 1
