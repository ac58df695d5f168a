"""Each project's request rate (its API keys and web sessions together), each web session's, and
what a project's previews, tests and new keys may take: TooManyRequests past any of them.

Every bucket is keyed by the project (or the session), never by the key a request came with,
so minting keys or signing in again buys no more. If Redis does not answer, the limits are not
applied rather than every request refused.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Awaitable, Callable
from uuid import UUID

from redis.asyncio import Redis
from redis.exceptions import RedisError

from agentlasso.config import Settings
from agentlasso.coordination.rate_limits import TokenBucket, take_together
from agentlasso.errors import TooManyRequests

log = logging.getLogger("agentlasso.limits")


class RequestLimits:
    """The buckets, shared by every API process through Redis."""

    def __init__(self, redis: Redis, settings: Settings) -> None:
        prefix = f"{settings.queue_name}:rate"
        self.settings = settings
        self.project = TokenBucket(
            redis, f"{prefix}:project", settings.rate_limit_per_s, settings.rate_limit_burst
        )
        self.session = TokenBucket(
            redis, f"{prefix}:session", settings.web_rate_limit_per_s, settings.web_rate_limit_burst
        )
        self.open_pages = TokenBucket(
            redis, f"{prefix}:open-pages", settings.open_page_rate_limit_per_s,
            settings.open_page_rate_limit_burst,
        )  # fmt: skip
        per_min = settings.quota_preview_calls_per_min
        self.preview_calls = TokenBucket(redis, f"{prefix}:preview-calls", per_min / 60, per_min)
        per_hour = settings.quota_keys_created_per_hour
        self.keys_created = TokenBucket(redis, f"{prefix}:keys-created", per_hour / 3600, per_hour)

    async def admit_request(self, project_id: UUID) -> None:
        """One API request of the project."""
        per_s = self.settings.rate_limit_per_s
        _refuse_past(
            await _wait(take_together([(self.project, str(project_id))])),
            lambda retry_s: (
                f"This project made more than {per_s:g} requests a second (its API "
                f"keys and web sessions together); try again in {retry_s} s."
            ),
        )

    async def admit_page(
        self, project_id: UUID, session_token: str, user_id: UUID | None = None
    ) -> None:
        """One page request of a web session: from its own bucket (its user's, shared by all
        their sessions, when it has one) and its project's at once."""
        session_key = (
            f"user:{user_id}"
            if user_id is not None
            else hashlib.sha256(session_token.encode()).hexdigest()[:32]
        )
        buckets = [(self.session, session_key), (self.project, str(project_id))]
        per_s = self.settings.web_rate_limit_per_s
        _refuse_past(
            await _wait(take_together(buckets)),
            lambda retry_s: (
                f"Too many requests from this project or this browser (at most "
                f"{per_s:g} pages a second a session or a user): try again in {retry_s} s."
            ),
        )

    async def admit_open_page(self, ip: str | None) -> None:
        """One request of a page open to everyone (signing in, setting a password), from an
        address: nobody signed in, so the address is all there is to count by."""
        per_s = self.settings.open_page_rate_limit_per_s
        _refuse_past(
            await _wait(take_together([(self.open_pages, ip or "unknown")])),
            lambda retry_s: (
                f"Too many sign-in requests from your address (at most {per_s:g} a second): "
                f"try again in {retry_s} s."
            ),
        )

    async def take_preview_calls(self, project_id: UUID, calls: int, what: str) -> None:
        """Count a preview's or a test's calls (its agent call, each judge check it may ask)."""
        per_min = self.settings.quota_preview_calls_per_min
        _refuse_past(
            await _wait(take_together([(self.preview_calls, str(project_id))], calls)),
            lambda retry_s: (
                f"Your project's previews and tests may make {per_min} agent and AI "
                f"judge calls a minute, and {what} would make {calls}: try again in {retry_s} s."
            ),
        )

    async def take_key_creation(self, project_id: UUID) -> None:
        """Count a new API key of the project."""
        per_hour = self.settings.quota_keys_created_per_hour
        _refuse_past(
            await _wait(take_together([(self.keys_created, str(project_id))])),
            lambda retry_s: (
                f"Your project may create {per_hour} API keys an hour: try again in {retry_s} s."
            ),
        )


def _refuse_past(wait_s: float, detail: Callable[[int], str]) -> None:
    """TooManyRequests saying when to try again, when the buckets said to wait."""
    if wait_s > 0:
        retry_after_s = max(1, math.ceil(wait_s))
        raise TooManyRequests(detail(retry_after_s), retry_after_s=retry_after_s)


async def _wait(taking: Awaitable[float]) -> float:
    """The seconds to wait the buckets say; 0 when Redis does not answer (not applied)."""
    try:
        wait_s = await taking
    except (RedisError, OSError):
        log.warning("rate limits are not applied: Redis did not answer", exc_info=True)
        return 0.0
    return wait_s
