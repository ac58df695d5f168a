"""Verdicts of identical judge requests, kept in PostgreSQL."""

from __future__ import annotations

from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor
from agentlasso.domain.judging import CachedAnswer

_GET = "SELECT answer FROM judge_cache WHERE key = $1"
_PUT = """
INSERT INTO judge_cache (key, project_id, model, answer) VALUES ($1, $2, $3, $4)
ON CONFLICT (key) DO NOTHING
"""


async def get(executor: Executor, key: str) -> CachedAnswer | None:
    """The cached answer for a request key, if any."""
    answer = await executor.fetchval(_GET, key)
    return None if answer is None else msgspec.convert(answer, CachedAnswer)


async def put(executor: Executor, key: str, project_id: UUID, answer: CachedAnswer) -> None:
    """Keep an answer (the first one kept for a key stays)."""
    await executor.execute(_PUT, key, project_id, answer.model, answer)
