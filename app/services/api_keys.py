"""Project API keys: random, shown once, stored only as a hash, revoked at once."""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from uuid import UUID

import msgspec

from agentlasso.db import api_keys, projects
from agentlasso.db.pool import Connection, Executor, connect
from agentlasso.domain.audit import Caller, CliActor, KeyActor
from agentlasso.domain.scopes import LiveKey, Scope
from agentlasso.domain.web import ApiKeyInfo
from agentlasso.errors import Conflict, NotAuthenticated, NotFound
from agentlasso.services import audit
from agentlasso.services.platform import Platform

log = logging.getLogger("agentlasso.api_keys")

KEY_PREFIX = "al_"
# `al_` plus 8 characters: enough to tell keys apart in a listing, far too few to guess one.
PREFIX_LENGTH = len(KEY_PREFIX) + 8
# Longer than any key we make: a longer one is refused before it is hashed.
MAX_KEY_LENGTH = 200
# A key's "last used" is written at most this often per process: not on every request.
TOUCH_EVERY_S = 60.0
_touched: dict[bytes, float] = {}


def new_key() -> str:
    """A fresh key: the recognisable prefix, then 256 random bits."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> bytes:
    """The stored form of a key."""
    return hashlib.sha256(key.encode("utf-8")).digest()


class NewKey(msgspec.Struct, frozen=True, kw_only=True):
    """A key just made: the key itself (shown this once) and its scope."""

    key: str
    scope: Scope


async def create_key(
    connection: Connection, project_id: UUID, scope: Scope, caller: Caller
) -> NewKey:
    """Create and store a key of this scope for the project, in the connection's open
    transaction; the plain key is returned once."""
    key = new_key()
    prefix = key[:PREFIX_LENGTH]
    key_id = await api_keys.insert_key(connection, project_id, prefix, hash_key(key), scope)
    await audit.record(
        connection, project_id, caller, "api_key.created", audit.about("api_key", key_id),
        prefix=prefix, scope=scope.value,
    )  # fmt: skip
    return NewKey(key=key, scope=scope)


async def create_key_for_project_name(
    database_url: str, project_name: str, scope: Scope = Scope.ADMIN
) -> NewKey:
    """Create the project if needed, then a key of this scope for it (`agentlasso keys
    create`)."""
    caller = Caller(actor=CliActor(command="keys create"))
    connection = await connect(database_url)
    try:
        async with connection.transaction():
            project_id = await projects.ensure_project(connection, project_name)
            return await create_key(connection, project_id, scope, caller)
    finally:
        await connection.close()


def key_actor(key_id: UUID, key: str) -> KeyActor:
    """The audit log's actor for a presented key: its id and the prefix people recognise."""
    return KeyActor(id=key_id, prefix=key[:PREFIX_LENGTH])


async def authenticate(executor: Executor, key: str | None) -> LiveKey:
    """The live key presented; NotAuthenticated when it is missing or dead."""
    if not key:
        raise NotAuthenticated("Send a project API key as `x-api-key` or `Authorization: Bearer`.")
    found = await live_key(executor, key)
    if found is None:
        raise NotAuthenticated("The API key is not valid or has been revoked.")
    return found


async def live_key(executor: Executor, key: str) -> LiveKey | None:
    """A key that is one of ours and not revoked (its project and scope); None otherwise."""
    if not key.startswith(KEY_PREFIX) or len(key) > MAX_KEY_LENGTH:
        return None
    return await api_keys.active_key(executor, hash_key(key))


async def admit(platform: Platform, key: str | None) -> LiveKey:
    """A valid key that is within its project's request rate; TooManyRequests otherwise (every
    key of a project draws on the one bucket)."""
    found = await authenticate(platform.pool, key)
    assert key is not None
    await _note_use(platform, hash_key(key))
    await platform.limits.admit_request(found.project_id)
    return found


async def revoke_key_by_prefix(database_url: str, prefix: str) -> None:
    """Revoke the one active key starting with `prefix` (`agentlasso keys revoke`)."""
    prefix = prefix[:PREFIX_LENGTH]
    caller = Caller(actor=CliActor(command="keys revoke"))
    connection = await connect(database_url)
    try:
        async with connection.transaction():
            keys = await api_keys.active_keys_with_prefix(connection, prefix)
            if not keys:
                raise NotFound(f"No active key starts with {prefix}.")
            if len(keys) > 1:
                raise Conflict(f"{len(keys)} active keys start with {prefix}; none revoked.")
            key_id, project_id = keys[0]
            await api_keys.revoke_key(connection, key_id)
            await _record_revoked(connection, project_id, caller, key_id, prefix)
    finally:
        await connection.close()


async def _record_revoked(
    connection: Connection, project_id: UUID, caller: Caller, key_id: UUID, prefix: str
) -> None:
    subject = audit.about("api_key", key_id)
    await audit.record(connection, project_id, caller, "api_key.revoked", subject, prefix=prefix)


async def _note_use(platform: Platform, key_hash: bytes) -> None:
    now = time.monotonic()
    if now - _touched.get(key_hash, -TOUCH_EVERY_S) < TOUCH_EVERY_S:
        return
    if len(_touched) > 10_000:
        _touched.clear()
    _touched[key_hash] = now
    await api_keys.touch_key(platform.pool, key_hash)


async def list_project_keys(platform: Platform, project_id: UUID) -> list[ApiKeyInfo]:
    """The project's keys (their prefixes, never the keys), active first."""
    return await api_keys.list_keys(platform.pool, project_id)


async def create_project_key(
    platform: Platform, project_id: UUID, scope: Scope, caller: Caller
) -> NewKey:
    """A new key of this scope for the project, returned once; TooManyRequests past the keys
    it may create an hour, Conflict when it holds as many active keys as it may."""
    await platform.limits.take_key_creation(project_id)
    cap = platform.settings.quota_api_keys
    async with platform.pool.acquire() as connection, connection.transaction():
        # Locks the project's row: two requests at once cannot both take the last place.
        active = await api_keys.lock_and_count_active(connection, project_id)
        if active >= cap:
            raise Conflict(
                f"Your project has {active} active API keys, the most it may hold "
                f"(AGENTLASSO_QUOTA_API_KEYS is {cap}): revoke one before creating another."
            )
        return await create_key(connection, project_id, scope, caller)


async def revoke_project_key(
    platform: Platform, project_id: UUID, key_id: UUID, caller: Caller
) -> None:
    """Revoke one of the project's keys at once; NotFound when it has no such active key."""
    async with platform.pool.acquire() as connection, connection.transaction():
        prefix = await api_keys.revoke_project_key(connection, project_id, key_id)
        if prefix is None:
            raise NotFound("No active key with this id in your project.")
        await _record_revoked(connection, project_id, caller, key_id, prefix)
