"""Migrations apply from zero, each once."""

from __future__ import annotations

import uuid

import asyncpg

from app.db.migrations import apply_migrations, migration_files
from tests.conftest import ServerUrls, with_database


async def test_every_migration_applies_from_zero_then_none_again(server_urls: ServerUrls) -> None:
    name = f"agentlasso_migrate_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(server_urls.postgres_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(server_urls.postgres_url, name)
    try:
        first = await apply_migrations(url)
        second = await apply_migrations(url)
        connection = await asyncpg.connect(url)
        try:
            recorded = [
                r["name"]
                for r in await connection.fetch("SELECT name FROM schema_migrations ORDER BY name")
            ]
            tables = {
                r["tablename"]
                for r in await connection.fetch(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                )
            }
        finally:
            await connection.close()
    finally:
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()

    files = [path.name for path in migration_files()]
    assert first == files and files, "every file applies, in order"
    assert second == []
    assert recorded == files
    assert {"projects", "api_keys", "datasets", "test_cases", "test_case_revisions"} <= tables


def test_migration_files_are_numbered_without_gaps() -> None:
    numbers = [int(path.name[:4]) for path in migration_files()]
    assert numbers == list(range(1, len(numbers) + 1))
