"""When a failed attempt is tried again, and how long to wait before it."""

from __future__ import annotations

import datetime
import email.utils
import random
import time
from collections.abc import Awaitable, Callable

# How a retry loop waits: asyncio.sleep, or in tests a recorder that asserts the delays.
Sleep = Callable[[float], Awaitable[None]]

# The answers that say "try again later" (connection errors and timeouts are retried too);
# any other answer is final.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


def retry_after_s(value: str | None) -> float | None:
    """The wait a Retry-After header asks for (seconds or an HTTP date), None if unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # a "-0000" zone: UTC, by RFC 5322
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - time.time())


class RetryPolicy:
    """Exponential backoff with full jitter, or the agent's Retry-After up to a cap."""

    def __init__(self, *, max_attempts: int, retry_after_cap_s: float, backoff_base_s: float):
        self.max_attempts = max(1, max_attempts)
        self._cap_s = retry_after_cap_s
        self._base_s = backoff_base_s

    def delay_s(self, attempt_number: int, asked_s: float | None) -> float:
        """How long to wait after this attempt failed, before the next one."""
        if asked_s is not None:
            return min(asked_s, self._cap_s)
        ceiling_s = min(self._cap_s, self._base_s * 2 ** (attempt_number - 1))
        # Full jitter: spreads the retries of many calls that failed together (an agent restart).
        return random.uniform(0.0, ceiling_s)  # noqa: S311 - timing jitter, not a secret
