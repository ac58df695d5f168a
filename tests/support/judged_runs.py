"""Runs an AI judge grades: an API process and worker processes whose judge is the fake
Anthropic API (tests/support/fake_anthropic.py), and a CI run of cases with one criterion."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from agentlasso.config import Settings
from tests.support.api import FINAL, create_dataset, start_run, wait_final
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic, Request, failed, passed
from tests.support.processes import WorkerProcesses, api_process

CRITERION = "States the refund amount"
# The fake judge says no to a reply carrying this, whatever it says: wrong on a known subset.
JUDGE_SAYS_NO = "[judge-says-no]"
RIGHT = "Your refund of 20 EUR is on its way."
WRONGLY_FAILED = f"Your refund of 20 EUR is on its way. {JUDGE_SAYS_NO}"
SHORT = "Your refund is on its way."


def judge_by_marker(request: Request) -> Any:
    """Fail a reply with the marker or without an amount; pass every other."""
    text = request.prompt_text
    reply_fails = JUDGE_SAYS_NO in text or "20 EUR" not in text
    return (failed() if reply_fails else passed())(request)


@contextmanager
def judging_platform(settings: Settings) -> Iterator[tuple[str, FakeAnthropic]]:
    """An API process and worker processes judging with the fake Anthropic (judge_by_marker);
    the API's URL and the fake, whose requests a test may read."""
    pool = WorkerProcesses(
        settings.database_url, settings.redis_url, settings.queue_name, settings.secret_key or ""
    )
    with FakeAnthropic(default=judge_by_marker) as anthropic:
        env = {
            "AGENTLASSO_QUEUE": settings.queue_name,
            "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "ANTHROPIC_BASE_URL": anthropic.base_url,
        }
        try:
            with api_process(settings.database_url, settings.redis_url, env) as (url, _pid):
                pool.start(extra_env=env)
                yield url, anthropic
        finally:
            pool.stop_all()


async def new_judged_dataset(api: httpx.AsyncClient, count: int) -> tuple[str, list[str]]:
    """A dataset of `count` cases, each with the one criterion; its id and the cases' ids."""
    dataset = await create_dataset(api)
    ids = []
    for index in range(count):
        case = {
            "input": f"refund {index}",
            "checks": [{"type": "llm_judge", "criterion": CRITERION}],
        }
        created = await api.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
        assert created.status_code == 201, created.text
        ids.append(created.json()["id"])
    return dataset["id"], ids


async def ci_run_of(
    api: httpx.AsyncClient, dataset_id: str, replies: dict[str, str]
) -> dict[str, Any]:
    """A CI run of the dataset, each case answered with its reply; the run once it ended."""
    run = await start_run(api, dataset_id=dataset_id)
    results = [{"test_case_id": case, "actual_output": reply} for case, reply in replies.items()]
    posted = await api.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
    )
    assert posted.status_code in (200, 202), posted.text
    final = await wait_final(api, run["run_id"])
    assert final["status"] in FINAL and final["status"] != "cancelled", final
    return final


async def judged_run(api: httpx.AsyncClient, replies: list[str]) -> tuple[str, str, list[str]]:
    """A CI run of one new case per reply, each with the one criterion; the dataset, the run
    and the cases."""
    dataset_id, ids = await new_judged_dataset(api, len(replies))
    final = await ci_run_of(api, dataset_id, dict(zip(ids, replies, strict=True)))
    return dataset_id, final["run_id"], ids
