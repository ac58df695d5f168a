"""Failed password sign-ins, counted per email address (whether or not a user has it)."""

from __future__ import annotations

from datetime import timedelta

from agentlasso.db.pool import Executor

_IS_LOCKED = """
SELECT EXISTS (SELECT 1 FROM sign_in_failures WHERE email = lower($1) AND locked_until > now())
"""
# A failure within the window adds to the count; one after it starts a new window.
_COUNT_FAILURE = """
INSERT INTO sign_in_failures (email, failures, first_failed_at) VALUES (lower($1), 1, now())
ON CONFLICT (email) DO UPDATE SET
    failures = CASE WHEN sign_in_failures.first_failed_at > now() - $2::interval
                    THEN sign_in_failures.failures + 1 ELSE 1 END,
    first_failed_at = CASE WHEN sign_in_failures.first_failed_at > now() - $2::interval
                           THEN sign_in_failures.first_failed_at ELSE now() END
RETURNING failures
"""
_LOCK = """
UPDATE sign_in_failures SET locked_until = now() + $2::interval, failures = 0
WHERE email = lower($1)
"""
_CLEAR = "DELETE FROM sign_in_failures WHERE email = lower($1)"
# Anyone can send any address: rows that no longer lock or count anything are swept.
_SWEEP = """
DELETE FROM sign_in_failures
WHERE first_failed_at < now() - $1::interval AND (locked_until IS NULL OR locked_until < now())
"""


async def is_locked(executor: Executor, email: str) -> bool:
    """Whether sign-ins with this address are refused for now."""
    locked: bool = await executor.fetchval(_IS_LOCKED, email)
    return locked


async def count_failure(
    executor: Executor, email: str, *, limit: int, window: timedelta, lock_for: timedelta
) -> bool:
    """Count a failed sign-in; True when it was the one that locked the address."""
    await executor.execute(_SWEEP, max(window, lock_for))
    failures: int = await executor.fetchval(_COUNT_FAILURE, email, window)
    if failures < limit:
        return False
    await executor.execute(_LOCK, email, lock_for)
    return True


async def clear_failures(executor: Executor, email: str) -> None:
    """Forget an address's failures (it signed in)."""
    await executor.execute(_CLEAR, email)
