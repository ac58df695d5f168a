"""Which judge client judges a project's runs: its own key and model, else the server's.

Clients are kept per (key, model), so every run of a project shares one connection pool; a
project's settings are read again after a short while, so a new key is used within a minute.
"""

from __future__ import annotations

import time
from uuid import UUID

from agentlasso.config import Settings
from agentlasso.db import projects
from agentlasso.db.pool import Executor
from agentlasso.domain.judging import ProjectJudge, judge_key_owner
from agentlasso.judge.client import JudgeClient, JudgeSettings
from agentlasso.secrets_box import UnsealError, unseal

SETTINGS_TTL_S = 30.0


def judge_settings(settings: Settings, api_key: str | None, model: str) -> JudgeSettings:
    """The judge client's configuration, from the server's, with this key and model."""
    return JudgeSettings(
        api_key=api_key,
        model=model,
        base_url=settings.anthropic_base_url,
        timeout_s=settings.judge_timeout_s,
        max_attempts=settings.judge_max_attempts,
        retry_after_cap_s=settings.judge_retry_after_cap_s,
        forced_tool_models=settings.judge_forced_tool_models,
    )


class JudgeClients:
    """One worker's judge clients, chosen per project."""

    def __init__(self, settings: Settings, executor: Executor, secret_key: bytes) -> None:
        self.settings = settings
        self.executor = executor
        self.secret_key = secret_key
        self._clients: dict[tuple[str, str], JudgeClient] = {}
        self._projects: dict[UUID, tuple[float, ProjectJudge]] = {}

    async def for_project(self, project_id: UUID) -> JudgeClient | None:
        """The client for the project's runs; None when neither it nor the server has a key."""
        chosen = await self.settings_for(project_id)
        if chosen is None:
            return None
        assert chosen.api_key is not None
        client = self._clients.get((chosen.api_key, chosen.model))
        if client is None:
            client = JudgeClient(chosen)
            self._clients[(chosen.api_key, chosen.model)] = client
        return client

    async def settings_for(self, project_id: UUID) -> JudgeSettings | None:
        """The key and model the project's model calls use: its own, else the server's; None
        when neither it nor the server has a key (case generation asks the same model)."""
        judge = await self._project(project_id)
        model = judge.model or self.settings.judge_model
        key = self._open(project_id, judge) or self.settings.anthropic_api_key
        return None if key is None else judge_settings(self.settings, key, model)

    async def uses_server_key(self, project_id: UUID) -> bool:
        """Whether the project's model calls are on the server's key (it has none of its own)."""
        return self._open(project_id, await self._project(project_id)) is None

    async def aclose(self) -> None:
        """Close every client's connections."""
        for client in self._clients.values():
            await client.aclose()

    async def _project(self, project_id: UUID) -> ProjectJudge:
        kept = self._projects.get(project_id)
        now = time.monotonic()
        if kept is not None and now - kept[0] < SETTINGS_TTL_S:
            return kept[1]
        judge = await projects.judge_settings(self.executor, project_id)
        self._projects[project_id] = (now, judge)
        return judge

    def _open(self, project_id: UUID, judge: ProjectJudge) -> str | None:
        if judge.key_encrypted is None:
            return None
        try:
            return unseal(
                self.secret_key, judge.key_encrypted, judge_key_owner(project_id)
            ).decode()
        except UnsealError:
            # Sealed under another server key: the project sets it again; meanwhile, no key.
            return None
