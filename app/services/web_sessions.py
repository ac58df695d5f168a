"""Signing in to the web app: with a project key, or once with the link `agentlasso dev` prints.

A session opened by a user (their password, their link) carries the user's id.

The browser keeps a random session token in an HttpOnly cookie; only its hash is stored, with
the project and the token every form must carry (CSRF). The key itself is never kept.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import timedelta
from uuid import UUID

import msgspec

from agentlasso.db import api_keys as key_rows
from agentlasso.db import web_sessions as session_rows
from agentlasso.db.pool import Executor
from agentlasso.domain.audit import Actor, Caller, LinkActor, UserActor
from agentlasso.domain.scopes import Scope
from agentlasso.domain.web import WebSession
from agentlasso.errors import NotAuthenticated
from agentlasso.services import audit
from agentlasso.services.api_keys import KEY_PREFIX, PREFIX_LENGTH, key_actor, live_key
from agentlasso.services.platform import Platform

log = logging.getLogger("agentlasso.audit")

# A session lives this long after its last use, and never longer than LIFETIME in all.
IDLE = timedelta(hours=12)
LIFETIME = timedelta(days=7)
# The link `agentlasso dev` prints works once, within this.
LINK_VALID_FOR = timedelta(minutes=10)
LINK_SPENT = (
    "This sign-in link has been used or has expired: sign in with an API key, or restart "
    "`agentlasso dev` for a new link."
)
# Longer than any token we make: a longer one is refused before it is hashed.
MAX_TOKEN_LENGTH = 100


class NewSession(msgspec.Struct, frozen=True):
    """A session just opened: the cookie's token (shown to the browser only) and its CSRF token."""

    token: str
    csrf_token: str


def token_hash(token: str) -> bytes:
    """The stored form of a session or link token."""
    return hashlib.sha256(token.encode("utf-8")).digest()


async def sign_in_with_key(platform: Platform, key: str, ip: str | None) -> NewSession:
    """A session for the key's project, of the key's scope; NotAuthenticated when the key is not
    a live one or of scope `ingest`, TooManyRequests past its project's request rate (each
    sign-in writes a session)."""
    key = key.strip()
    found = await live_key(platform.pool, key)
    if found is None:
        await _record_failure(platform, key, ip)
        raise NotAuthenticated("That API key is not valid, or it has been revoked.")
    if found.scope == Scope.INGEST:
        # Every page reads, and an ingest key reads nothing: a session would be all refusals.
        raise NotAuthenticated(
            'This key\'s scope is "ingest": it only sends traces. Sign in with a key of scope '
            '"read", "ci" or "admin".'
        )
    await platform.limits.admit_request(found.project_id)
    caller = Caller(actor=key_actor(found.key_id, key), ip=ip)
    return await open_session(platform, found.project_id, caller, "api_key", key_id=found.key_id)


async def sign_in_with_link(platform: Platform, token: str, ip: str | None) -> NewSession:
    """A session from a one-time link; NotAuthenticated when it was used or is too old."""
    opens = None
    if len(token) <= MAX_TOKEN_LENGTH:
        opens = await session_rows.use_login_token(platform.pool, token_hash(token))
    if opens is None:
        log.warning("sign_in.failed: a spent or unknown sign-in link, from %s", ip)
        raise NotAuthenticated(LINK_SPENT)
    project_id, user_id, email = opens
    actor: Actor = LinkActor() if user_id is None else UserActor(id=user_id, email=email or "")
    caller = Caller(actor=actor, ip=ip)
    return await open_session(platform, project_id, caller, "sign_in_link", user_id=user_id)


async def _record_failure(platform: Platform, key: str, ip: str | None) -> None:
    """A failed sign-in goes to the log of the project whose key it names by its prefix (a
    revoked key, or a live one's prefix with the wrong rest), drawing on that project's request
    rate like a request; text that names none of our keys goes to the server's log only."""
    named = None
    if key.startswith(KEY_PREFIX) and len(key) >= PREFIX_LENGTH:
        named = await key_rows.key_with_prefix(platform.pool, key[:PREFIX_LENGTH])
    if named is None:
        log.warning("sign_in.failed: text that names no key, from %s", ip)
        return
    key_id, project_id, revoked = named
    await platform.limits.admit_request(project_id)
    caller = Caller(actor=key_actor(key_id, key), ip=ip)
    reason = "revoked_key" if revoked else "wrong_key"
    async with platform.pool.acquire() as connection, connection.transaction():
        await audit.record(connection, project_id, caller, "sign_in.failed", reason=reason)


async def link_opens(platform: Platform, token: str) -> tuple[str, str | None]:
    """The project a one-time link would sign in to and the user's email (None for a link of
    the project alone); the link stays unused. NotAuthenticated when it was used or is too old."""
    opens = None
    if len(token) <= MAX_TOKEN_LENGTH:
        opens = await session_rows.login_token_opens(platform.pool, token_hash(token))
    if opens is None:
        raise NotAuthenticated(LINK_SPENT)
    return opens


async def current_session(platform: Platform, token: str | None) -> WebSession | None:
    """The live session the cookie names, kept alive by this use; None when there is none."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    return await session_rows.use_session(platform.pool, token_hash(token), LIFETIME, IDLE)


async def sign_out(platform: Platform, token: str | None) -> None:
    """End the session the cookie names, if any."""
    if token:
        await session_rows.delete_session(platform.pool, token_hash(token))


async def create_login_link_token(
    executor: Executor, project_id: UUID, user_id: UUID | None = None
) -> str:
    """A token for a one-time sign-in link to the project (`/login?token=...`), as the user
    when one is given."""
    token = secrets.token_urlsafe(32)
    await session_rows.insert_login_token(
        executor, token_hash(token), project_id, user_id, LINK_VALID_FOR
    )
    return token


async def open_session(
    platform: Platform,
    project_id: UUID,
    caller: Caller,
    method: str,
    *,
    key_id: UUID | None = None,
    user_id: UUID | None = None,
) -> NewSession:
    """A new session on the project, its sign-in in the audit log: opened with a key (it ends
    with the key), or as a user (it ends with their membership)."""
    async with platform.pool.acquire() as connection, connection.transaction():
        # Every sign-in sweeps what can no longer be used, so neither table only grows.
        await session_rows.delete_expired_sessions(connection)
        await session_rows.delete_spent_login_tokens(connection)
        session = NewSession(token=secrets.token_urlsafe(32), csrf_token=secrets.token_urlsafe(32))
        await session_rows.insert_session(
            connection, token_hash(session.token), project_id, key_id, user_id,
            session.csrf_token, IDLE,
        )  # fmt: skip
        await audit.record(connection, project_id, caller, "sign_in.succeeded", method=method)
    return session
