"""The judge's verdict cache, kept in PostgreSQL so every worker and run shares it."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db import judge_cache
from agentlasso.db.pool import Executor
from agentlasso.domain.judging import CachedAnswer


class PgJudgeCache:
    """The judge's verdict cache, in PostgreSQL (its keys are scoped by project)."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor

    async def get(self, key: str) -> CachedAnswer | None:
        return await judge_cache.get(self.executor, key)

    async def put(self, key: str, project_id: UUID, answer: CachedAnswer) -> None:
        await judge_cache.put(self.executor, key, project_id, answer)
