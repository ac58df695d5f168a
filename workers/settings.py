"""arq's WorkerSettings: the job functions and the long-lived clients in the job context."""

from __future__ import annotations

from typing import Any

from arq.connections import RedisSettings

from app.config import load_settings
from app.db.pool import create_pool


async def startup(ctx: dict[str, Any]) -> None:
    """Open the long-lived clients a job needs."""
    settings = ctx["settings"] = load_settings()
    ctx["pool"] = await create_pool(settings.database_url, min_size=1, max_size=4)


async def shutdown(ctx: dict[str, Any]) -> None:
    """Close what startup opened."""
    pool = ctx.get("pool")
    if pool is not None:
        await pool.close()


async def ping(_ctx: dict[str, Any]) -> str:
    """A job that proves the worker is consuming its queue."""
    return "pong"


class WorkerSettings:
    """One worker process; `agentlasso worker` overrides max_jobs and the queue."""

    functions = (ping,)
    on_startup = startup
    on_shutdown = shutdown
    redis_settings = RedisSettings.from_dsn(load_settings().redis_url)
    queue_name = load_settings().queue_name
    handle_signals = True
