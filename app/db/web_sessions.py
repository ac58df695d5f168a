"""Browser sessions and one-time sign-in links, stored as hashes of their tokens."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

from agentlasso.db.pool import Executor
from agentlasso.domain.audit import Actor, KeyActor, LinkActor, UserActor
from agentlasso.domain.scopes import Scope
from agentlasso.domain.web import WebSession

_INSERT_SESSION = """
INSERT INTO web_sessions (token_hash, project_id, api_key_id, user_id, csrf_token, expires_at)
VALUES ($1, $2, $3, $4, $5, now() + $6::interval)
"""

# A use keeps the session alive for `idle` more, never past `lifetime` after it began; a
# session opened with a key ends with the key, and may do what its key may (one opened with a
# one-time link, which `agentlasso dev` prints for its operator, or by a user, may do everything
# for now: roles come later); a user's ends with their membership of the project's organisation.
# The use is written at most once a minute: a write per page would make every page view wait for
# a WAL flush.
_USE_SESSION = """
WITH live AS (
    SELECT s.token_hash, s.project_id, s.user_id, u.email, s.csrf_token, s.last_seen_at,
           s.api_key_id, k.prefix,
           coalesce(k.scope, 'admin') AS scope, r.role, r.organisation_role
    FROM web_sessions s LEFT JOIN api_keys k ON k.id = s.api_key_id
    LEFT JOIN users u ON u.id = s.user_id
    -- A user's role here: the project's own for them when set, else their organisation's; an
    -- owner holds every project, whatever a project's row says, and owner is never one
    -- project's (a row written before that was refused counts for nothing).
    LEFT JOIN LATERAL (
        SELECT CASE WHEN m.role = 'owner' THEN 'owner'
                    ELSE coalesce(nullif(pr.role, 'owner'), m.role) END AS role,
               m.role AS organisation_role
        FROM memberships m JOIN projects p ON p.organisation_id = m.organisation_id
        LEFT JOIN project_roles pr ON pr.user_id = m.user_id AND pr.project_id = p.id
        WHERE m.user_id = s.user_id AND p.id = s.project_id
    ) r ON true
    WHERE s.token_hash = $1 AND s.expires_at > now()
      AND (s.api_key_id IS NULL OR (k.id IS NOT NULL AND k.revoked_at IS NULL))
      -- A user's session lives only as long as their membership.
      AND (s.user_id IS NULL OR r.role IS NOT NULL)
), kept_alive AS (
    UPDATE web_sessions s
    SET last_seen_at = now(), expires_at = least(s.created_at + $2::interval, now() + $3::interval)
    FROM live
    WHERE s.token_hash = live.token_hash AND live.last_seen_at < now() - interval '1 minute'
)
SELECT project_id, user_id, email, csrf_token, api_key_id, prefix, scope, role, organisation_role
FROM live
"""

_DELETE_SESSION = "DELETE FROM web_sessions WHERE token_hash = $1"
_DELETE_EXPIRED = "DELETE FROM web_sessions WHERE expires_at < now()"

# A link used once, or too old, can never sign anyone in: only its hash would stay behind.
_DELETE_SPENT_LINKS = "DELETE FROM login_tokens WHERE used_at IS NOT NULL OR expires_at < now()"

_INSERT_LINK = """
INSERT INTO login_tokens (token_hash, project_id, user_id, expires_at)
VALUES ($1, $2, $3, now() + $4::interval)
"""
# Looking at a link uses nothing: only its sign-in button does (a link scanner opens links).
_PEEK_LINK = """
SELECT p.name, u.email FROM login_tokens t JOIN projects p ON p.id = t.project_id
LEFT JOIN users u ON u.id = t.user_id
WHERE t.token_hash = $1 AND t.used_at IS NULL AND t.expires_at > now()
"""
_USE_LINK = """
UPDATE login_tokens SET used_at = now()
WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
RETURNING project_id, user_id, (SELECT u.email FROM users u WHERE u.id = user_id) AS email
"""


async def insert_session(
    executor: Executor,
    token_hash: bytes,
    project_id: UUID,
    api_key_id: UUID | None,
    user_id: UUID | None,
    csrf_token: str,
    idle: timedelta,
) -> None:
    """Store a new session, alive for `idle`."""
    await executor.execute(
        _INSERT_SESSION, token_hash, project_id, api_key_id, user_id, csrf_token, idle
    )


async def use_session(
    executor: Executor, token_hash: bytes, lifetime: timedelta, idle: timedelta
) -> WebSession | None:
    """The live session with this token, kept alive by the use; None when there is none."""
    row = await executor.fetchrow(_USE_SESSION, token_hash, lifetime, idle)
    if row is None:
        return None
    key_id, user_id = row["api_key_id"], row["user_id"]
    actor: Actor = LinkActor()
    if key_id is not None:
        actor = KeyActor(id=key_id, prefix=row["prefix"])
    elif user_id is not None:
        actor = UserActor(id=user_id, email=row["email"])
    return WebSession(
        project_id=row["project_id"],
        csrf_token=row["csrf_token"],
        scope=Scope(row["scope"]),
        actor=actor,
        user_id=user_id,
        role=row["role"],
        organisation_role=row["organisation_role"],
    )


async def delete_session(executor: Executor, token_hash: bytes) -> None:
    """End a session."""
    await executor.execute(_DELETE_SESSION, token_hash)


async def delete_expired_sessions(executor: Executor) -> None:
    """Forget sessions past their end."""
    await executor.execute(_DELETE_EXPIRED)


async def delete_spent_login_tokens(executor: Executor) -> None:
    """Forget sign-in links that were used or expired."""
    await executor.execute(_DELETE_SPENT_LINKS)


async def insert_login_token(
    executor: Executor,
    token_hash: bytes,
    project_id: UUID,
    user_id: UUID | None,
    valid_for: timedelta,
) -> None:
    """Store a sign-in link's token (a user's, or the project's alone)."""
    await executor.execute(_INSERT_LINK, token_hash, project_id, user_id, valid_for)


async def use_login_token(
    executor: Executor, token_hash: bytes
) -> tuple[UUID, UUID | None, str | None] | None:
    """The project a sign-in link opens and the user it signs in (id, email), once and in time."""
    row = await executor.fetchrow(_USE_LINK, token_hash)
    return None if row is None else (row["project_id"], row["user_id"], row["email"])


async def login_token_opens(executor: Executor, token_hash: bytes) -> tuple[str, str | None] | None:
    """The name of the project a sign-in link would open and the email of the user it signs in
    (None: the project's alone), while it can; None otherwise."""
    row = await executor.fetchrow(_PEEK_LINK, token_hash)
    return None if row is None else (row["name"], row["email"])
