"""Verdicts of identical judge requests, kept in PostgreSQL."""

from __future__ import annotations

from typing import Any

import asyncpg

from app.db.pool import Executor

_GET = "SELECT model, answer FROM judge_cache WHERE key = $1"
_PUT = """
INSERT INTO judge_cache (key, model, answer) VALUES ($1, $2, $3)
ON CONFLICT (key) DO NOTHING
"""


async def get(executor: Executor, key: str) -> asyncpg.Record | None:
    """The cached answer for a request key, if any."""
    row: asyncpg.Record | None = await executor.fetchrow(_GET, key)
    return row


async def put(executor: Executor, key: str, model: str, answer: Any) -> None:
    """Keep an answer (the first one kept for a key stays)."""
    await executor.execute(_PUT, key, model, answer)
