"""What the server's Anthropic key has spent today on each project without a key of its own.

Counted in Redis, in millionths of a dollar per project and UTC day, by every process that
calls the model on the server's key (workers judging runs, the API judging previews, generating
cases), from the usage each answer reports. A call is made only while the day's spend is under
the budget, so the budget is overrun by at most the calls already in flight. If Redis does not
answer, the budget is not applied, as the request limits are not.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from uuid import UUID

from redis.asyncio import Redis
from redis.exceptions import RedisError

from agentlasso.config import Settings

log = logging.getLogger("agentlasso.server_spend")

MICRO_USD = 1_000_000
# A day's count outlives its day a little (a process whose clock is slightly behind).
KEEP_S = 2 * 86_400


def day_of(now_s: float) -> str:
    """The UTC day a moment falls on."""
    return datetime.fromtimestamp(now_s, UTC).strftime("%Y-%m-%d")


def seconds_to_next_day(now_s: float) -> int:
    """Whole seconds until the next UTC midnight, at least 1."""
    return max(1, 86_400 - int(now_s) % 86_400)


def budget_spent_reason(budget_usd: float) -> str:
    """Why a judge check was not graded, or a generation refused, past the budget."""
    return (
        f"the server's Anthropic key may spend USD {budget_usd:g} a day on this project, and "
        "today's is spent (set the project's own Anthropic key in its judge settings, or wait "
        "until 00:00 UTC)"
    )


class ServerKeySpend:
    """Each project's spend on the server's key today, shared by every process."""

    def __init__(self, redis: Redis, prefix: str, budget_usd_per_day: float) -> None:
        self.redis = redis
        self.prefix = prefix
        self.budget_usd = budget_usd_per_day

    async def spent_reason(self, project_id: UUID) -> str | None:
        """Why no more calls may be made on the project's behalf today; None while they may."""
        try:
            raw = await self.redis.get(self._key(project_id))
        except (RedisError, OSError):
            log.warning("the server key's budget is not applied: Redis did not answer")
            return None
        spent_usd = int(raw or 0) / MICRO_USD
        return budget_spent_reason(self.budget_usd) if spent_usd >= self.budget_usd else None

    async def add(self, project_id: UUID, cost_usd: float) -> None:
        """Count what a call on the project's behalf cost."""
        micro = round(cost_usd * MICRO_USD)
        if micro <= 0:
            return
        key = self._key(project_id)
        try:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.incrby(key, micro)
                pipe.expire(key, KEEP_S)
                await pipe.execute()
        except (RedisError, OSError):
            log.warning("the server key's spend was not counted: Redis did not answer")

    @classmethod
    def of(cls, redis: Redis, settings: Settings) -> ServerKeySpend:
        """The count the settings name: in the queue's namespace, with their budget."""
        prefix = f"{settings.queue_name}:server-spend"
        return cls(redis, prefix, settings.server_judge_budget_usd_per_day)

    def _key(self, project_id: UUID) -> str:
        return f"{self.prefix}:{project_id}:{day_of(time.time())}"
