"""Token buckets in Redis, shared by every process: request rate limits, and pacing.

Concurrency alone does not keep a fleet under an API's rate limit (fast answers mean many
requests a minute); without pacing, most requests past the limit come back 429 and each costs a
wait. A bucket hands out turns at its rate, refilled by elapsed time, up to its capacity.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence

from redis.asyncio import Redis

# Refill each bucket by elapsed time, then take `wanted` tokens from every one of them, or from
# none and say how long until all of them hold enough. A bucket is never asked for more than
# it can hold (a heavy action waits for a full bucket rather than for ever).
_TAKE = """
local now = tonumber(ARGV[1])
local wanted = tonumber(ARGV[2])
local wait = 0
local levels = {}
for i, key in ipairs(KEYS) do
    local capacity = tonumber(ARGV[1 + 2 * i])
    local per_ms = tonumber(ARGV[2 + 2 * i])
    local state = redis.call('HMGET', key, 'tokens', 'at')
    local tokens = tonumber(state[1]) or capacity
    local at = tonumber(state[2]) or now
    tokens = math.min(capacity, tokens + math.max(0, now - at) * per_ms)
    levels[i] = tokens
    local need = math.min(wanted, capacity)
    if tokens < need then
        wait = math.max(wait, math.ceil((need - tokens) / per_ms))
    end
end
for i, key in ipairs(KEYS) do
    local capacity = tonumber(ARGV[1 + 2 * i])
    local per_ms = tonumber(ARGV[2 + 2 * i])
    local tokens = levels[i]
    if wait == 0 then
        tokens = tokens - math.min(wanted, capacity)
    end
    redis.call('HSET', key, 'tokens', tokens, 'at', now)
    redis.call('PEXPIRE', key, math.max(60000, math.ceil(capacity / per_ms)))
end
return wait
"""


class TokenBucket:
    """`per_s` tokens a second, at most `capacity` saved up, one bucket per key."""

    def __init__(self, redis: Redis, prefix: str, per_s: float, capacity: float) -> None:
        self.redis = redis
        self.prefix = prefix
        self.per_ms = per_s / 1000
        self.capacity = capacity
        self._take = redis.register_script(_TAKE)

    async def take(self, key: str, tokens: int = 1) -> float:
        """Take the tokens now and return 0, or take none and return the seconds to wait."""
        return await take_together([(self, key)], tokens)

    async def turn(self, key: str, tokens: int = 1) -> None:
        """Return once the tokens are taken, waiting for them as long as it takes. More tokens
        than the bucket holds are taken a bucketful at a time (a take is capped at the
        capacity: asking for more in one would take only a bucketful)."""
        remaining = tokens
        while remaining > 0:
            part = min(remaining, max(1, math.floor(self.capacity)))
            wait_s = await self.take(key, part)
            if wait_s <= 0:
                remaining -= part
                continue
            # The bucket says exactly when the tokens will be there: no event to wait for.
            await asyncio.sleep(wait_s)


async def take_together(buckets: Sequence[tuple[TokenBucket, str]], tokens: int = 1) -> float:
    """Take the tokens from every (bucket, key) at once and return 0, or from none of them and
    return the seconds until all of them hold enough."""
    now_ms = int(time.time() * 1000)
    args: list[float] = [now_ms, tokens]
    for bucket, _ in buckets:
        args += [bucket.capacity, bucket.per_ms]
    keys = [f"{bucket.prefix}:{key}" for bucket, key in buckets]
    wait_ms = int(await buckets[0][0]._take(keys=keys, args=args))
    return wait_ms / 1000


class RatePacer:
    """Waits for a turn under `per_minute` requests a minute, shared through Redis."""

    def __init__(self, redis: Redis, key: str, per_minute: int) -> None:
        # About a second's worth at most: a burst never outruns the limit by much.
        self.bucket = TokenBucket(redis, key, per_minute / 60, max(1.0, per_minute / 60))

    async def turn(self) -> None:
        """Return when this process may send one request."""
        await self.bucket.turn("all")
