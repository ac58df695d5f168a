"""Failed password sign-ins, counted per email address (whether or not a user has it)."""

from __future__ import annotations

from datetime import timedelta

from agentlasso.db.pool import Executor

# An attempt is counted before its password is checked, in one statement whose row lock puts
# attempts at once in order: each gets its own number, so parallel guesses cannot all pass as
# the first. A locked address counts nothing more. A failure within the window adds to the
# count; one after it starts a new window.
_TAKE_ATTEMPT = """
INSERT INTO sign_in_failures AS f (email, failures, first_failed_at)
VALUES (lower($1), 1, now())
ON CONFLICT (email) DO UPDATE SET
    failures = CASE WHEN f.locked_until > now() THEN f.failures
                    WHEN f.first_failed_at > now() - $2::interval THEN f.failures + 1 ELSE 1 END,
    first_failed_at = CASE WHEN f.locked_until > now() THEN f.first_failed_at
                           WHEN f.first_failed_at > now() - $2::interval THEN f.first_failed_at
                           ELSE now() END
RETURNING f.failures, coalesce(f.locked_until > now(), false) AS locked
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


async def take_attempt(
    executor: Executor, email: str, *, window: timedelta, sweep_after: timedelta
) -> tuple[bool, int]:
    """Count a sign-in attempt with this address before its password is checked: whether the
    address is locked, and which attempt within the window this is."""
    await executor.execute(_SWEEP, sweep_after)
    row = await executor.fetchrow(_TAKE_ATTEMPT, email, window)
    if row is None:  # an upsert's RETURNING always answers
        return True, 0
    return bool(row["locked"]), int(row["failures"])


async def lock(executor: Executor, email: str, lock_for: timedelta) -> None:
    """Refuse sign-ins with this address for `lock_for`."""
    await executor.execute(_LOCK, email, lock_for)


async def clear_failures(executor: Executor, email: str) -> None:
    """Forget an address's failures (it signed in)."""
    await executor.execute(_CLEAR, email)
