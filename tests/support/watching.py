"""A platform watching production, for the trace-rule and alert tests: an `agentlasso api`
process and worker processes, configured to grade traces a second after they go quiet and to
evaluate alerts every half second, with the fake Anthropic API as the judge."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from agentlasso.config import Settings
from tests.support.databases import new_project_key
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from tests.support.processes import WorkerProcesses, api_process
from tests.support.waiting import eventually


def watching_env(settings: Settings, fake: FakeAnthropic) -> dict[str, str]:
    return {
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "ANTHROPIC_BASE_URL": fake.base_url,
        "AGENTLASSO_JUDGE_MODEL": "claude-sonnet-5-5",
        "AGENTLASSO_JUDGE_TIMEOUT_S": "5",
        "AGENTLASSO_TRACE_SETTLE_S": "1",
        "AGENTLASSO_ALERT_EVALUATE_S": "0.5",
        "AGENTLASSO_PUBLIC_URL": "https://agentlasso.example.com",
    }


class WatchedPlatform:
    """A running API and workers, with a project's key and a client holding it."""

    def __init__(self, url: str, key: str, http: httpx.AsyncClient) -> None:
        self.url, self.key, self.http = url, key, http

    async def created(self, path: str, **fields: Any) -> dict[str, Any]:
        answer = await self.http.post(path, json=fields)
        assert answer.status_code == 201, answer.text
        made: dict[str, Any] = answer.json()
        return made

    async def rule(self, **fields: Any) -> dict[str, Any]:
        return await self.created("/api/v1/trace-rules", **fields)

    async def evaluations(self, trace_id: str) -> list[dict[str, Any]]:
        answer = await self.http.get(f"/api/v1/traces/{trace_id}")
        if answer.status_code == 404:
            return []
        assert answer.status_code == 200, answer.text
        evaluations: list[dict[str, Any]] = answer.json()["evaluations"]
        return evaluations

    async def graded(self, trace_id: str, times: int = 1) -> dict[str, Any]:
        """The trace's only evaluation, once it was graded `times` times."""

        async def done() -> dict[str, Any] | None:
            found = await self.evaluations(trace_id)
            return found[0] if found and found[0]["times_graded"] >= times else None

        return await eventually(done, timeout_s=30, what=f"trace {trace_id} graded")

    async def alert(self, alert_id: str) -> dict[str, Any]:
        answer = await self.http.get(f"/api/v1/alerts/{alert_id}")
        assert answer.status_code == 200, answer.text
        alert: dict[str, Any] = answer.json()
        return alert


@contextlib.asynccontextmanager
async def watched_platform(
    settings: Settings, workers: WorkerProcesses, fake: FakeAnthropic
) -> AsyncIterator[WatchedPlatform]:
    env = watching_env(settings, fake)
    key = await new_project_key(settings.database_url)
    with api_process(settings.database_url, settings.redis_url, env) as (url, _pid):
        workers.start(extra_env=env)
        async with httpx.AsyncClient(base_url=url, headers={"x-api-key": key}, timeout=30) as http:
            yield WatchedPlatform(url, key, http)
