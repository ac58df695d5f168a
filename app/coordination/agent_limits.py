"""An agent's `max_concurrency`, held across every worker process: a lease semaphore in Redis.

Each call in flight holds a lease (a member of a sorted set scored by its expiry). A worker that
dies without releasing leaks nothing for long: expired leases are swept on the next acquire.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import AsyncIterator
from uuid import UUID

from redis.asyncio import Redis

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    return 1
end
return 0
"""
_RETRY_S = 0.02


class AgentLimiter:
    """Acquire a slot of an agent's max_concurrency before calling it."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self.redis = redis
        self.prefix = prefix
        self._acquire = redis.register_script(_ACQUIRE)

    @contextlib.asynccontextmanager
    async def slot(
        self, holder: UUID | str, limit: int | None, lease_s: float
    ) -> AsyncIterator[None]:
        """Hold one of `limit` slots of an agent (or of the judge) while the block runs."""
        if limit is None:
            yield
            return
        key = f"{self.prefix}:slots:{holder}"
        token = uuid.uuid4().hex
        await self._wait_for_slot(key, token, limit, lease_s)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):  # an unreleased lease expires by itself
                await self.redis.zrem(key, token)

    async def _wait_for_slot(self, key: str, token: str, limit: int, lease_s: float) -> None:
        lease_ms = int(lease_s * 1000)
        while True:
            now_ms = int(time.time() * 1000)
            args: list[int | str] = [now_ms, now_ms + lease_ms, limit, token, lease_ms * 2]
            if await self._acquire(keys=[key], args=args):
                return
            # Jitter, so waiting workers do not retry in lockstep.
            await asyncio.sleep(_RETRY_S * (1 + random.random()))  # noqa: S311
