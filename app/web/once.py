"""A form submitted twice (a double click, a resent POST) makes one object.

Each creating form carries a random `form_id`; the first submission claims it in Redis and
records where it led, and a repeat is sent there instead of creating again.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Awaitable, Callable
from uuid import UUID

from agentlasso.queue import QueueConnection
from agentlasso.services.platform import Platform

CLAIM_FOR_S = 3600
_PENDING = "-"
_FORM_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


def new_form_id() -> str:
    """The id a newly rendered form carries."""
    return secrets.token_urlsafe(16)


async def once(
    platform: Platform,
    project_id: UUID,
    form_id: object,
    fallback: str,
    act: Callable[[], Awaitable[str]],
) -> str:
    """Run `act` (which returns where it led) unless this form id already ran; where to go.

    Ids are claimed per project, so one project can never be sent to where another's led."""
    if not isinstance(form_id, str) or not _FORM_ID.match(form_id):
        return await act()
    redis = platform.queue
    key = f"{platform.settings.queue_name}:web-form:{project_id}:{form_id}"
    if not await redis.set(key, _PENDING, nx=True, ex=CLAIM_FOR_S):
        return await _where_it_led(redis, key, fallback)
    try:
        location = await act()
    except BaseException:
        await redis.delete(key)  # it made nothing: the form may be sent again
        raise
    await redis.set(key, location, ex=CLAIM_FOR_S)
    return location


async def _where_it_led(redis: QueueConnection, key: str, fallback: str) -> str:
    """The first submission's result, waiting a little while it is still being made."""
    for _ in range(50):
        value = await redis.get(key)
        if value is not None and value not in (_PENDING, _PENDING.encode()):
            return value.decode() if isinstance(value, bytes) else str(value)
        await asyncio.sleep(0.1)
    return fallback
