"""Migrations apply from zero, each once."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import asyncpg
import pytest

from agentlasso.db.migrations import SQL_DIR, EditedMigration, apply_migrations, migration_files
from tests.support.databases import ServerUrls, drop_database, fresh_database, with_database
from tests.support.schema import describe_schema


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


async def test_the_migrated_schema_is_the_checked_in_one(database_url: str) -> None:
    # A migration that changes more (or less) than sql/schema.sql says fails here; after a
    # deliberate change, regenerate it: python -m tests.support.schema > sql/schema.sql
    connection = await asyncpg.connect(database_url)
    try:
        migrated = await describe_schema(connection)
    finally:
        await connection.close()
    assert migrated == (SQL_DIR / "schema.sql").read_text(encoding="utf-8")


async def test_a_migration_edited_after_it_was_applied_is_refused(
    server_urls: ServerUrls, tmp_path: Path
) -> None:
    sql_dir = tmp_path / "sql"
    shutil.copytree(SQL_DIR, sql_dir)
    url = await fresh_database(server_urls.postgres_url, "agentlasso_edited")
    try:
        assert await apply_migrations(url, sql_dir) == []  # all applied by fresh_database
        first = sorted(sql_dir.glob("0001_*.sql"))[0]
        first.write_text(first.read_text() + "\n-- a quiet edit\n")
        with pytest.raises(EditedMigration, match=first.name):
            await apply_migrations(url, sql_dir)
    finally:
        await drop_database(server_urls.postgres_url, url)
