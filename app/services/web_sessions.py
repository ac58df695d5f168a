"""Signing in to the web app: with a project key, or once with the link `agentlasso dev` prints.

The browser keeps a random session token in an HttpOnly cookie; only its hash is stored, with
the project and the token every form must carry (CSRF). The key itself is never kept.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from uuid import UUID

import msgspec

from agentlasso.db import web_sessions as session_rows
from agentlasso.db.pool import Executor
from agentlasso.domain.scopes import Scope
from agentlasso.domain.web import WebSession
from agentlasso.errors import NotAuthenticated
from agentlasso.services.api_keys import live_key
from agentlasso.services.platform import Platform

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


async def sign_in_with_key(platform: Platform, key: str) -> NewSession:
    """A session for the key's project, of the key's scope; NotAuthenticated when the key is not
    a live one or of scope `ingest`, TooManyRequests past its project's request rate (each
    sign-in writes a session)."""
    found = await live_key(platform.pool, key.strip())
    if found is None:
        raise NotAuthenticated("That API key is not valid, or it has been revoked.")
    if found.scope == Scope.INGEST:
        # Every page reads, and an ingest key reads nothing: a session would be all refusals.
        raise NotAuthenticated(
            'This key\'s scope is "ingest": it only sends traces. Sign in with a key of scope '
            '"read", "ci" or "admin".'
        )
    await platform.limits.admit_request(found.project_id)
    return await _open(platform.pool, found.project_id, found.key_id)


async def sign_in_with_link(platform: Platform, token: str) -> NewSession:
    """A session from a one-time link; NotAuthenticated when it was used or is too old."""
    project_id = None
    if len(token) <= MAX_TOKEN_LENGTH:
        project_id = await session_rows.use_login_token(platform.pool, token_hash(token))
    if project_id is None:
        raise NotAuthenticated(LINK_SPENT)
    return await _open(platform.pool, project_id, None)


async def link_project_name(platform: Platform, token: str) -> str:
    """The project a one-time link would sign in to (the link stays unused);
    NotAuthenticated when it was used or is too old."""
    name = None
    if len(token) <= MAX_TOKEN_LENGTH:
        name = await session_rows.login_token_project_name(platform.pool, token_hash(token))
    if name is None:
        raise NotAuthenticated(LINK_SPENT)
    return name


async def current_session(platform: Platform, token: str | None) -> WebSession | None:
    """The live session the cookie names, kept alive by this use; None when there is none."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    return await session_rows.use_session(platform.pool, token_hash(token), LIFETIME, IDLE)


async def sign_out(platform: Platform, token: str | None) -> None:
    """End the session the cookie names, if any."""
    if token:
        await session_rows.delete_session(platform.pool, token_hash(token))


async def create_login_link_token(executor: Executor, project_id: UUID) -> str:
    """A token for a one-time sign-in link to the project (`/login?token=...`)."""
    token = secrets.token_urlsafe(32)
    await session_rows.insert_login_token(executor, token_hash(token), project_id, LINK_VALID_FOR)
    return token


async def _open(executor: Executor, project_id: UUID, key_id: UUID | None) -> NewSession:
    # Every sign-in sweeps what can no longer be used, so neither table only grows.
    await session_rows.delete_expired_sessions(executor)
    await session_rows.delete_spent_login_tokens(executor)
    session = NewSession(token=secrets.token_urlsafe(32), csrf_token=secrets.token_urlsafe(32))
    await session_rows.insert_session(
        executor, token_hash(session.token), project_id, key_id, session.csrf_token, IDLE
    )
    return session
