"""Organisations, their users and memberships, and the one-time links that set a password."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

from agentlasso.db.pool import Executor
from agentlasso.domain.accounts import Role, SignInUser

_ENSURE_ORGANISATION = """
INSERT INTO organisations (name) VALUES ($1)
ON CONFLICT ON CONSTRAINT organisations_name_key DO UPDATE SET name = EXCLUDED.name
RETURNING id
"""
_FIRST_PROJECT = """
SELECT id FROM projects WHERE organisation_id = $1 ORDER BY created_at, id LIMIT 1
"""
_INSERT_USER = "INSERT INTO users (email) VALUES ($1) RETURNING id"
_USER_BY_EMAIL = "SELECT id FROM users WHERE lower(email) = lower($1)"
_SET_MEMBERSHIP = """
INSERT INTO memberships (user_id, organisation_id, role) VALUES ($1, $2, $3)
ON CONFLICT (user_id, organisation_id) DO UPDATE SET role = EXCLUDED.role
"""
_DELETE_MEMBERSHIP = """
DELETE FROM memberships WHERE user_id = $1 AND organisation_id = $2 RETURNING user_id
"""
# Ending a membership ends the sessions it let in (the session check refuses them too).
_DELETE_MEMBER_SESSIONS = """
DELETE FROM web_sessions s USING projects p
WHERE s.user_id = $1 AND p.id = s.project_id AND p.organisation_id = $2
"""
_SIGN_IN_USER = """
SELECT u.id, u.email, u.password_hash, (
    SELECT p.id FROM memberships m JOIN projects p ON p.organisation_id = m.organisation_id
    WHERE m.user_id = u.id ORDER BY m.created_at, p.created_at, p.id LIMIT 1
) AS project_id
FROM users u WHERE lower(u.email) = lower($1)
"""
_SET_HASH = "UPDATE users SET password_hash = $2 WHERE id = $1"

# An account single sign-on takes over keeps no other way in: its password, its unused links
# (setting a password, signing in) and its sessions all end together.
_RETIRE_OTHER_SIGN_INS = """
WITH cleared AS (
    UPDATE users SET password_hash = NULL WHERE id = $1
    RETURNING (SELECT password_hash IS NOT NULL FROM users WHERE id = $1) AS had_password
), set_links AS (
    UPDATE password_tokens SET used_at = now()
    WHERE user_id = $1 AND used_at IS NULL AND expires_at > now() RETURNING 1
), sign_in_links AS (
    UPDATE login_tokens SET used_at = now()
    WHERE user_id = $1 AND used_at IS NULL AND expires_at > now() RETURNING 1
), sessions AS (
    DELETE FROM web_sessions WHERE user_id = $1 RETURNING 1
)
SELECT coalesce((SELECT bool_or(had_password) FROM cleared), false) AS had_password,
       (SELECT count(*) FROM set_links) + (SELECT count(*) FROM sign_in_links) AS links_spent,
       (SELECT count(*) FROM sessions) AS sessions_ended
"""

_INSERT_SET_LINK = """
INSERT INTO password_tokens (token_hash, user_id, expires_at)
VALUES ($1, $2, now() + $3::interval)
"""
# Looking at a link uses nothing: only its form does (a link scanner opens links).
_PEEK_SET_LINK = """
SELECT u.email FROM password_tokens t JOIN users u ON u.id = t.user_id
WHERE t.token_hash = $1 AND t.used_at IS NULL AND t.expires_at > now()
"""
_USE_SET_LINK = """
UPDATE password_tokens SET used_at = now()
WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
RETURNING user_id
"""


async def ensure_organisation(executor: Executor, name: str) -> UUID:
    """The id of the organisation with this name, created if missing."""
    organisation_id: UUID = await executor.fetchval(_ENSURE_ORGANISATION, name)
    return organisation_id


async def first_project(executor: Executor, organisation_id: UUID) -> UUID | None:
    """The organisation's oldest project; None when it has none."""
    project_id: UUID | None = await executor.fetchval(_FIRST_PROJECT, organisation_id)
    return project_id


async def user_id_by_email(executor: Executor, email: str) -> UUID | None:
    """The user with this email, however capitalised; None when there is none."""
    user_id: UUID | None = await executor.fetchval(_USER_BY_EMAIL, email)
    return user_id


async def insert_user(executor: Executor, email: str) -> UUID:
    """A new user without a password (asyncpg's UniqueViolationError if the email is taken)."""
    user_id: UUID = await executor.fetchval(_INSERT_USER, email)
    return user_id


async def set_membership(
    executor: Executor, user_id: UUID, organisation_id: UUID, role: Role
) -> None:
    """Make the user a member of the organisation with this role (or change their role)."""
    await executor.execute(_SET_MEMBERSHIP, user_id, organisation_id, role)


async def delete_membership(executor: Executor, user_id: UUID, organisation_id: UUID) -> bool:
    """End a membership and the sessions it let in; False when there was none."""
    deleted = await executor.fetchval(_DELETE_MEMBERSHIP, user_id, organisation_id)
    await executor.execute(_DELETE_MEMBER_SESSIONS, user_id, organisation_id)
    return deleted is not None


async def sign_in_user(executor: Executor, email: str) -> SignInUser | None:
    """What signing in needs of the user with this email; None when there is none."""
    row = await executor.fetchrow(_SIGN_IN_USER, email)
    return None if row is None else SignInUser(**row)


async def retire_other_sign_ins(executor: Executor, user_id: UUID) -> tuple[bool, int, int]:
    """Clear the user's password, spend their open links and end their sessions: whether they
    had a password, how many links were spent and how many sessions ended."""
    row = await executor.fetchrow(_RETIRE_OTHER_SIGN_INS, user_id)
    assert row is not None
    return bool(row["had_password"]), int(row["links_spent"]), int(row["sessions_ended"])


async def set_password_hash(executor: Executor, user_id: UUID, password_hash: str) -> None:
    """Store the user's new password hash."""
    await executor.execute(_SET_HASH, user_id, password_hash)


async def insert_password_token(
    executor: Executor, token_hash: bytes, user_id: UUID, valid_for: timedelta
) -> None:
    """Store a set-password link's token."""
    await executor.execute(_INSERT_SET_LINK, token_hash, user_id, valid_for)


async def password_token_email(executor: Executor, token_hash: bytes) -> str | None:
    """The email of the user a set-password link is for, while it can be used."""
    email: str | None = await executor.fetchval(_PEEK_SET_LINK, token_hash)
    return email


async def use_password_token(executor: Executor, token_hash: bytes) -> UUID | None:
    """The user a set-password link is for, spending it; None when used or too old."""
    user_id: UUID | None = await executor.fetchval(_USE_SET_LINK, token_hash)
    return user_id
