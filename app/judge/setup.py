"""The judge a process asks: its calls limited across every process (and per project), paced,
and answered from the verdict cache when the same question was asked before.

Workers build it at start-up; the API builds one the first time a preview needs the judge.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from uuid import UUID

from redis.asyncio import Redis

from agentlasso.config import Settings
from agentlasso.coordination.agent_limits import AgentLimiter
from agentlasso.coordination.rate_limits import RatePacer
from agentlasso.coordination.server_spend import ServerKeySpend
from agentlasso.db.pool import Executor
from agentlasso.judge.cache import PgJudgeCache
from agentlasso.judge.calls import Judge


def require_priced_model(settings: Settings) -> None:
    """SystemExit when the server's judge model has no price (its spend could not be counted)."""
    if settings.anthropic_api_key and settings.judge_model not in settings.judge_prices:
        raise SystemExit(
            f"AGENTLASSO_JUDGE_MODEL {settings.judge_model!r} has no price: add it with "
            "AGENTLASSO_JUDGE_PRICES='{\"<model>\": [input_usd, output_usd]}' (per million tokens)."
        )


def build_judge(
    settings: Settings, executor: Executor, limiter: AgentLimiter, redis: Redis
) -> Judge:
    """The judge, its calls limited across every process (and per project)."""
    rpm = settings.judge_requests_per_minute
    pacer = RatePacer(redis, f"{settings.queue_name}:judge-rate", rpm) if rpm else None
    share = settings.project_share
    project_cap = None if share >= 1 else max(1, int(settings.judge_concurrency * share))

    @contextlib.asynccontextmanager
    async def slot(project_id: UUID) -> AsyncIterator[None]:
        # The project's share first: waiting on it must not hold one of the shared slots.
        async with (
            limiter.slot(f"judge:{project_id}", project_cap),
            limiter.slot("judge", settings.judge_concurrency),
        ):
            if pacer is not None:
                await pacer.turn()
            yield

    return Judge(settings, PgJudgeCache(executor), slot, ServerKeySpend.of(redis, settings))
