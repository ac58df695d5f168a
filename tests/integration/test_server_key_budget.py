"""What the server's Anthropic key may spend a day on a project that has no key of its own:
past it the judge checks are not graded, saying why (never a pass), generation is refused
saying why, and a project with its own key is not capped."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import msgspec
import pytest
import pytest_asyncio

from agentlasso.config import Settings
from agentlasso.server import create_app
from tests.support.api import all_results, create_dataset, register_agent, wait_final
from tests.support.databases import new_project_key
from tests.support.fake_agent import running_fake_agent
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic, answer_with
from tests.support.processes import WorkerProcesses, api_process
from tests.support.servers import serving
from tests.support.web import browser, csrf_token, shown_text, sign_in

# A million input tokens a verdict: USD 2 each at claude-sonnet-5-5's price (2 / 10 per M).
COSTLY_USAGE = {
    "input_tokens": 1_000_000,
    "output_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
BUDGET_USD = 4.0
SPENT = "the server's Anthropic key may spend USD 4 a day on this project, and today's is spent"


@pytest.fixture(scope="module")
def anthropic() -> Iterator[FakeAnthropic]:
    costly_pass = answer_with({"reasoning": "It states the amount.", "passed": True},
                              usage=COSTLY_USAGE)  # fmt: skip
    with FakeAnthropic(default=costly_pass) as fake:
        yield fake


@pytest_asyncio.fixture
async def app_url(settings: Settings, anthropic: FakeAnthropic) -> AsyncIterator[str]:
    configured = msgspec.structs.replace(
        settings, anthropic_api_key=FAKE_API_KEY, anthropic_base_url=anthropic.base_url,
        judge_model="claude-sonnet-5-5", server_judge_budget_usd_per_day=BUDGET_USD,
    )  # fmt: skip
    async with serving(create_app(configured)) as url:
        yield url


def judged_case(token: str) -> dict[str, str]:
    """A new case with one critical AI judge check, each time a new input (no cached verdict)."""
    return {
        "csrf_token": token, "input": f"How much is my refund? {secrets.token_hex(4)}",
        "input_format": "text", "evaluation_type": "SCORE", "min_confidence": "70",
        "checks-0-type": "llm_judge", "checks-0-criterion": "States the refund amount",
        "checks-0-severity": "critical", "form_id": secrets.token_urlsafe(16), "action": "preview",
    }  # fmt: skip


async def previews(url: str, key: str, count: int) -> list[str]:
    """`count` Previews of judged cases in the rubric editor; what each preview panel says."""
    shown = []
    with running_fake_agent() as agent:
        async with (
            httpx.AsyncClient(base_url=url, headers={"x-api-key": key}, timeout=60) as api,
            browser(url) as web,
        ):
            await register_agent(api, agent.url)
            dataset = await create_dataset(api)
            await sign_in(web, key)
            token = await csrf_token(web)
            for _ in range(count):
                answer = await web.post(
                    f"/datasets/{dataset['id']}/cases/new", data=judged_case(token)
                )
                assert answer.status_code == 200, answer.text
                shown.append(shown_text(answer.text))
    return shown


async def test_past_its_budget_a_projects_judge_checks_are_not_graded_saying_why(
    app_url: str, database_url: str
) -> None:
    key = await new_project_key(database_url)
    first, second, third = await previews(app_url, key, 3)
    assert "Preview: passed" in first and "Preview: passed" in second
    assert "Preview: passed" not in third, "a check the judge did not grade never passes"
    assert SPENT in third
    # Another project on the server's key has its own day's budget.
    assert "Preview: passed" in (await previews(app_url, await new_project_key(database_url), 1))[0]


async def test_a_project_with_its_own_key_is_not_capped(app_url: str, database_url: str) -> None:
    key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=app_url, headers={"x-api-key": key}) as api:
        own = await api.patch("/api/v1/judge-settings", json={"anthropic_api_key": FAKE_API_KEY})
        assert own.status_code == 200, own.text
    shown = await previews(app_url, key, 3)
    assert all("Preview: passed" in each for each in shown)


async def test_generation_past_the_budget_is_refused_saying_why(
    app_url: str, database_url: str
) -> None:
    key = await new_project_key(database_url)
    await previews(app_url, key, 2)
    async with httpx.AsyncClient(base_url=app_url, headers={"x-api-key": key}) as api:
        dataset = await create_dataset(api)
        generated = await api.post(
            f"/api/v1/datasets/{dataset['id']}/generate",
            json={"system_prompt": "You are the support agent of a shop.", "count": 1},
        )
    assert generated.status_code == 429, generated.text
    assert SPENT in generated.json()["detail"]
    assert 1 <= int(generated.headers["retry-after"]) <= 86_400


def worker_env(settings: Settings, anthropic: FakeAnthropic) -> dict[str, str]:
    return {
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "ANTHROPIC_BASE_URL": anthropic.base_url,
        "AGENTLASSO_JUDGE_MODEL": "claude-sonnet-5-5",
        "AGENTLASSO_SERVER_JUDGE_BUDGET_USD_PER_DAY": str(BUDGET_USD),
        # One judge call at a time: each sees what the one before it cost.
        "AGENTLASSO_JUDGE_CONCURRENCY": "1",
    }


async def test_a_runs_judge_calls_stop_at_the_budget(
    settings: Settings, anthropic: FakeAnthropic, database_url: str
) -> None:
    key = await new_project_key(database_url)
    env = worker_env(settings, anthropic)
    workers = WorkerProcesses(
        settings.database_url, settings.redis_url, settings.queue_name, settings.secret_key or ""
    )
    try:
        with api_process(settings.database_url, settings.redis_url, env) as (url, _pid):
            workers.start(extra_env=env)
            results = await judged_ci_run(url, key, 5)
    finally:
        workers.stop_all()
    graded = [r for r in results if r["pass_fail"]]
    not_graded = [r for r in results if not r["pass_fail"]]
    assert len(graded) == 2, "USD 4 pays for two USD 2 verdicts"
    assert len(not_graded) == 3
    for result in not_graded:
        judged = result["check_results"][0]
        assert judged["status"] == "not_graded" and SPENT in judged["detail"]


async def judged_ci_run(url: str, key: str, count: int) -> list[dict[str, Any]]:
    """A CI run of `count` cases each with one AI judge check; its results once final."""
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": key}, timeout=120) as api:
        dataset = await create_dataset(api)
        ids = []
        for n in range(count):
            case = {"input": f"refund {n}?", "checks": [
                {"type": "llm_judge", "criterion": "States the refund amount"}]}  # fmt: skip
            answer = await api.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
            ids.append(answer.json()["id"])
        run = (await api.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})).json()
        results = [{"test_case_id": case_id, "actual_output": "20 EUR"} for case_id in ids]
        posted = await api.post(
            "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
        )
        assert posted.status_code in (200, 202), posted.text
        assert (await wait_final(api, run["run_id"]))["status"] == "completed"
        return await all_results(api, run["run_id"])
