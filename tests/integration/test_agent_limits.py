"""An agent's max_concurrency in one process: callers past the limit wait in the process, so a
lane of many calls to a slow, limited agent asks Redis a few at a time, on a few connections."""

from __future__ import annotations

import asyncio
import uuid

from redis.asyncio import Redis

from agentlasso.coordination.agent_limits import AgentLimiter
from tests.support.databases import ServerUrls


async def connections_named(redis: Redis, name: str) -> int:
    return sum(1 for client in await redis.client_list() if client["name"] == name)


async def test_callers_past_the_limit_wait_in_the_process_not_on_redis(
    server_urls: ServerUrls,
) -> None:
    name = f"limits-{uuid.uuid4().hex[:8]}"
    calling = Redis.from_url(server_urls.redis_url, client_name=name)
    looking = Redis.from_url(server_urls.redis_url)
    limiter = AgentLimiter(calling, f"agentlasso:test:{name}", lease_s=30)
    in_flight = most_in_flight = 0

    async def call() -> None:
        nonlocal in_flight, most_in_flight
        async with limiter.slot("slow-agent", 3):
            in_flight += 1
            most_in_flight = max(most_in_flight, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1

    try:
        await asyncio.wait_for(asyncio.gather(*(call() for _ in range(200))), timeout=30)
        opened = await connections_named(looking, name)
    finally:
        await calling.aclose()
        await looking.aclose()
    assert most_in_flight == 3
    # Three callers at a time ask for a slot and give it back; a fourth may be releasing.
    assert opened <= 4, f"{opened} Redis connections for 200 callers of a limit of 3"
