"""Databases for a test or benchmark run: a fresh one each, migrated, dropped at the end."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import msgspec

from agentlasso.db.migrations import apply_migrations
from agentlasso.domain.audit import Caller, CliActor
from agentlasso.domain.scopes import Scope
from agentlasso.services.api_keys import create_key, create_key_for_project_name, hash_key


class ServerUrls(msgspec.Struct, frozen=True):
    """Where the PostgreSQL server and Redis for this run are."""

    postgres_url: str
    redis_url: str


def with_database(url: str, database: str) -> str:
    """The same server URL pointing at another database."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


async def empty_database(server_url: str, prefix: str = "agentlasso_test") -> str:
    """A new database on this server, without a table; its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return with_database(server_url, name)


async def fresh_database(server_url: str, prefix: str = "agentlasso_test") -> str:
    """A new, migrated database on this server; its URL."""
    url = await empty_database(server_url, prefix)
    await apply_migrations(url)
    return url


async def drop_database(server_url: str, database_url: str) -> None:
    """Drop a database fresh_database made, whoever is still connected."""
    admin = await asyncpg.connect(server_url)
    try:
        name = urlsplit(database_url).path.lstrip("/")
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def new_project_key(
    database_url: str, prefix: str = "test", scope: Scope = Scope.ADMIN
) -> str:
    """A key for a brand-new project, so tests never see each other's objects."""
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    return (await create_key_for_project_name(database_url, name, scope)).key


async def key_of_scope(database_url: str, key: str, scope: Scope) -> str:
    """Another key of the same project as `key`, of this scope."""
    connection = await asyncpg.connect(database_url)
    try:
        project_id = await connection.fetchval(
            "SELECT project_id FROM api_keys WHERE key_hash = $1", hash_key(key)
        )
        async with connection.transaction():
            caller = Caller(actor=CliActor(command="test"))
            return (await create_key(connection, project_id, scope, caller)).key
    finally:
        await connection.close()
