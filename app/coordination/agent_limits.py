"""An agent's `max_concurrency`, held across every worker process: a lease semaphore in Redis.

Each call in flight holds a lease (a member of a sorted set scored by its expiry), renewed while
the call runs, however long that is (an agent's timeout, times its attempts, plus the waits
between them). A worker that dies without releasing leaks its slot for one lease at most:
expired leases are swept on the next acquire.

A process can never hold more than `limit` of a holder's slots, so no more than `limit` of its
callers ask Redis for one at once; the rest wait in the process, in turn. A lane of 50 calls
to an agent of max_concurrency 3 polls Redis three at a time, not fifty.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import AsyncIterator
from uuid import UUID

from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger("agentlasso.limits")

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    return 1
end
return 0
"""
# Only a lease still held is extended: one swept (its worker stalled past it) stays gone.
_RENEW = """
local renewed = redis.call('ZADD', KEYS[1], 'XX', 'CH', ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return renewed
"""
_RETRY_S = 0.02
# How long an acquire waits for Redis to answer again before it gives up (about a restart's).
REDIS_PATIENCE_S = 30.0
_REDIS_RETRY_S = 0.5


class _Gate:
    """A holder's slots as this process sees them: a semaphore of its limit, and its users."""

    __slots__ = ("semaphore", "users")

    def __init__(self, limit: int) -> None:
        self.semaphore = asyncio.Semaphore(limit)
        self.users = 0


# A lease lasts this long unless renewed; it is renewed three times in that span.
DEFAULT_LEASE_S = 30.0


class AgentLimiter:
    """Acquire a slot of an agent's max_concurrency before calling it."""

    def __init__(self, redis: Redis, prefix: str, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.redis = redis
        self.prefix = prefix
        self.lease_ms = int(lease_s * 1000)
        self._acquire = redis.register_script(_ACQUIRE)
        self._renew = redis.register_script(_RENEW)
        # By holder and limit (a changed limit gets a gate of its own); gone when unused.
        self._gates: dict[tuple[str, int], _Gate] = {}

    @contextlib.asynccontextmanager
    async def slot(self, holder: UUID | str, limit: int | None) -> AsyncIterator[None]:
        """Hold one of `limit` slots of an agent (or of the judge) while the block runs."""
        if limit is None:
            yield
            return
        key = f"{self.prefix}:slots:{holder}"
        async with self._in_process(key, limit):
            token = uuid.uuid4().hex
            await self._wait_for_slot(key, token, limit)
            renewing = asyncio.create_task(self._keep(key, token))
            try:
                yield
            finally:
                renewing.cancel()
                with contextlib.suppress(Exception):  # an unreleased lease expires by itself
                    await self.redis.zrem(key, token)

    @contextlib.asynccontextmanager
    async def _in_process(self, key: str, limit: int) -> AsyncIterator[None]:
        """One of this process's `limit` turns at the holder's slots."""
        gate = self._gates.get((key, limit))
        if gate is None:
            gate = self._gates[(key, limit)] = _Gate(limit)
        gate.users += 1
        try:
            async with gate.semaphore:
                yield
        finally:
            gate.users -= 1
            if not gate.users:
                del self._gates[(key, limit)]

    async def _wait_for_slot(self, key: str, token: str, limit: int) -> None:
        away_since: float | None = None
        while True:
            try:
                if await self._try_acquire(key, token, limit):
                    return
                away_since, pause_s = None, _RETRY_S
            except (RedisError, OSError):
                now = time.monotonic()
                if away_since is None:
                    away_since = now
                    log.warning(
                        "Redis did not answer for a concurrency slot; waiting", exc_info=True
                    )
                if now - away_since >= REDIS_PATIENCE_S:
                    raise
                pause_s = _REDIS_RETRY_S
            # Jitter, so waiting workers do not retry in lockstep.
            await asyncio.sleep(pause_s * (1 + random.random()))  # noqa: S311

    async def _try_acquire(self, key: str, token: str, limit: int) -> bool:
        """Take a slot if one is free (expired leases swept first)."""
        now_ms = int(time.time() * 1000)
        args: list[int | str] = [now_ms, now_ms + self.lease_ms, limit, token, self.lease_ms * 2]
        return bool(await self._acquire(keys=[key], args=args))

    async def _keep(self, key: str, token: str) -> None:
        """Extend the lease while the block runs, so a long call keeps its slot."""
        while True:
            await asyncio.sleep(self.lease_ms / 3000)
            expiry_ms = int(time.time() * 1000) + self.lease_ms
            try:
                held = await self._renew(keys=[key], args=[expiry_ms, token, self.lease_ms * 2])
            except Exception:  # Redis away for a moment: the next renewal tries again
                log.warning("could not renew a concurrency lease; retrying", exc_info=True)
                continue
            if not held:
                log.warning("a concurrency lease expired before it was renewed (%s)", key)
                return
