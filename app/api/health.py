"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import msgspec
from litestar import Response, get

from agentlasso.http.auth import PlatformDep

PROBE_TIMEOUT_S = 2.0


class Health(msgspec.Struct):
    """The process answers."""

    status: str


class Readiness(msgspec.Struct):
    """Whether each dependency answered."""

    status: str
    database: str
    redis: str


@get("/health", operation_id="health", tags=["health"])
async def health() -> Health:
    """The process is alive."""
    return Health(status="ok")


async def _probe(check: Awaitable[object]) -> str:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            await check
        return "ok"
    except Exception as exc:  # a probe reports any failure; it must never raise
        return f"unreachable: {type(exc).__name__}"


@get("/ready", operation_id="ready", tags=["health"])
async def ready(platform: PlatformDep) -> Response[Readiness]:
    """The database and Redis both answer."""
    database = await _probe(platform.pool.fetchval("SELECT 1"))
    redis = await _probe(platform.queue.ping())
    body = Readiness(
        status="ok" if database == redis == "ok" else "unavailable", database=database, redis=redis
    )
    if body.status == "ok":
        return Response(body)
    return Response(body, status_code=503)
