"""Token buckets in Redis, shared by every process: request rate limits, and pacing.

Concurrency alone does not keep a fleet under an API's rate limit (fast answers mean many
requests a minute); without pacing, most requests past the limit come back 429 and each costs a
wait. A bucket hands out turns at its rate, refilled by elapsed time, up to its capacity.
"""

from __future__ import annotations

import asyncio
import time

from redis.asyncio import Redis

# Refill by elapsed time, then take `n` tokens, or say how long until they are there.
_TAKE = """
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local wanted = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - at) * per_ms)
local wait = 0
if tokens >= wanted then
    tokens = tokens - wanted
else
    wait = math.ceil((wanted - tokens) / per_ms)
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('PEXPIRE', KEYS[1], math.max(60000, math.ceil(capacity / per_ms)))
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
        now_ms = int(time.time() * 1000)
        args = [self.capacity, self.per_ms, now_ms, tokens]
        wait_ms = int(await self._take(keys=[f"{self.prefix}:{key}"], args=args))
        return wait_ms / 1000

    async def turn(self, key: str, tokens: int = 1) -> None:
        """Return once the tokens are taken, waiting for them as long as it takes."""
        while True:
            wait_s = await self.take(key, tokens)
            if wait_s <= 0:
                return
            # The bucket says exactly when the tokens will be there: no event to wait for.
            await asyncio.sleep(wait_s)


class RatePacer:
    """Waits for a turn under `per_minute` requests a minute, shared through Redis."""

    def __init__(self, redis: Redis, key: str, per_minute: int) -> None:
        # About a second's worth at most: a burst never outruns the limit by much.
        self.bucket = TokenBucket(redis, key, per_minute / 60, max(1.0, per_minute / 60))

    async def turn(self) -> None:
        """Return when this process may send one request."""
        await self.bucket.turn("all")
