"""A requests-per-minute budget shared by every worker process: a token bucket in Redis.

Concurrency alone does not keep a fleet under an API's rate limit (fast answers mean many
requests a minute); without pacing, most requests past the limit come back 429 and each costs a
wait. The bucket hands out turns at the configured rate, so the fleet stays just under it.
"""

from __future__ import annotations

import asyncio
import time

from redis.asyncio import Redis

# Refill by elapsed time, then take a token or say how long until one is there.
_TAKE = """
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - at) * per_ms)
local wait = 0
if tokens >= 1 then
    tokens = tokens - 1
else
    wait = math.ceil((1 - tokens) / per_ms)
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', now)
redis.call('PEXPIRE', KEYS[1], 60000)
return wait
"""


class RatePacer:
    """Waits for a turn under `per_minute` requests a minute, shared through Redis."""

    def __init__(self, redis: Redis, key: str, per_minute: int) -> None:
        self.redis = redis
        self.key = key
        self.per_minute = per_minute
        # About a second's worth at most: a burst never outruns the limit by much.
        self.capacity = max(1.0, per_minute / 60)
        self._take = redis.register_script(_TAKE)

    async def turn(self) -> None:
        """Return when this process may send one request."""
        per_ms = self.per_minute / 60_000
        while True:
            now_ms = int(time.time() * 1000)
            wait_ms = int(await self._take(keys=[self.key], args=[self.capacity, per_ms, now_ms]))
            if wait_ms <= 0:
                return
            await asyncio.sleep(wait_ms / 1000)
