"""Single sign-on's rows: the sign-ins under way (each taken once) and remembered identities."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import msgspec

from agentlasso.db.pool import Executor

_INSERT_ATTEMPT = """
INSERT INTO sso_attempts (state_hash, browser_hash, nonce, code_verifier, next_path, expires_at)
VALUES ($1, $2, $3, $4, $5, now() + $6::interval)
"""
# Deleted as it is read: a state works once, whatever comes of it.
_TAKE_ATTEMPT = """
DELETE FROM sso_attempts WHERE state_hash = $1
RETURNING browser_hash, nonce, code_verifier, next_path, expires_at > now() AS live
"""
_DELETE_EXPIRED = "DELETE FROM sso_attempts WHERE expires_at <= now()"
_IDENTITY_USER = "SELECT user_id FROM sso_identities WHERE issuer = $1 AND subject = $2"
_INSERT_IDENTITY = """
INSERT INTO sso_identities (issuer, subject, user_id) VALUES ($1, $2, $3)
ON CONFLICT (issuer, subject) DO NOTHING
"""
_IDENTITY_OF_USER = "SELECT 1 FROM sso_identities WHERE issuer = $1 AND user_id = $2"
_ORGANISATION_NAMED = "SELECT id FROM organisations WHERE name = $1"
_ORGANISATIONS = "SELECT id FROM organisations ORDER BY created_at, id LIMIT 2"


class Attempt(msgspec.Struct, frozen=True):
    """A sign-in under way, as its callback finds it."""

    browser_hash: bytes
    nonce: str
    code_verifier: str
    next_path: str
    live: bool


async def insert_attempt(
    executor: Executor, state_hash: bytes, browser_hash: bytes, nonce: str, verifier: str,
    next_path: str, valid_for: timedelta,
) -> None:  # fmt: skip
    """Store a sign-in under way (and sweep the ones that expired)."""
    await executor.execute(_DELETE_EXPIRED)
    await executor.execute(
        _INSERT_ATTEMPT, state_hash, browser_hash, nonce, verifier, next_path, valid_for
    )


async def take_attempt(executor: Executor, state_hash: bytes) -> Attempt | None:
    """The sign-in this state started, deleted as it is read; None when there is none."""
    row = await executor.fetchrow(_TAKE_ATTEMPT, state_hash)
    return None if row is None else Attempt(**row)


async def identity_user(executor: Executor, issuer: str, subject: str) -> UUID | None:
    """The user an identity at the provider signed in as before; None the first time."""
    user_id: UUID | None = await executor.fetchval(_IDENTITY_USER, issuer, subject)
    return user_id


async def user_has_identity(executor: Executor, issuer: str, user_id: UUID) -> bool:
    """Whether the user already signs in as some identity of this provider."""
    return await executor.fetchval(_IDENTITY_OF_USER, issuer, user_id) is not None


async def remember_identity(executor: Executor, issuer: str, subject: str, user_id: UUID) -> None:
    """Tie an identity at the provider to a user, for good."""
    await executor.execute(_INSERT_IDENTITY, issuer, subject, user_id)


async def organisation_for_newcomers(executor: Executor, name: str | None) -> UUID | None:
    """The organisation named so, or with no name the only one; None when there is none (or,
    unnamed, several)."""
    if name is not None:
        found: UUID | None = await executor.fetchval(_ORGANISATION_NAMED, name)
        return found
    rows = await executor.fetch(_ORGANISATIONS)
    return rows[0]["id"] if len(rows) == 1 else None


async def user_email(executor: Executor, user_id: UUID) -> str | None:
    """The user's email; None when the user is gone."""
    email: str | None = await executor.fetchval("SELECT email FROM users WHERE id = $1", user_id)
    return email
