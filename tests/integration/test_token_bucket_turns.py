"""A turn for more calls than the bucket holds (a chunk of conversations pacing all its turns)
waits for every one of them, a bucketful at a time: it never takes one bucketful for all."""

from __future__ import annotations

import secrets
import time

from redis.asyncio import Redis

from agentlasso.coordination.rate_limits import TokenBucket
from tests.support.databases import ServerUrls


async def test_a_turn_past_the_capacity_waits_for_every_token(server_urls: ServerUrls) -> None:
    redis = Redis.from_url(server_urls.redis_url)
    bucket = TokenBucket(redis, f"agentlasso:test:{secrets.token_hex(6)}", per_s=100, capacity=10)
    try:
        started = time.monotonic()
        await bucket.turn("host", 30)  # a full bucket, then 20 more at 100 a second
        waited = time.monotonic() - started
        left = await bucket.take("host")
    finally:
        await redis.aclose()
    assert 0.18 <= waited < 2.0, waited
    assert left > 0, "the bucket was emptied: all 30 were taken"
