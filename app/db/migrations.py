"""Forward-only migrations: sql/NNNN_name.sql applied in order, each once, never edited after.

Each applied file's SHA-256 is recorded; a file changed after it was applied is refused, since
the databases that applied it would silently differ from the ones that apply it now.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from pathlib import Path

import asyncpg

# sql/ is the package agentlasso.migrations: a wheel (and so the image) carries the files
# inside the installed package, and an editable checkout reads them in place.
SQL_DIR = Path(str(resources.files("agentlasso.migrations")))
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# Any fixed number: it serialises concurrent `migrate` runs (API and worker starting together).
_LOCK_KEY = 7_346_221_001

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    name        text PRIMARY KEY,
    applied_at  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text
"""
_APPLIED = "SELECT name, checksum FROM schema_migrations"
_RECORD = "INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)"
# Files applied before checksums were kept get theirs on the next run.
_BACKFILL = "UPDATE schema_migrations SET checksum = $2 WHERE name = $1 AND checksum IS NULL"


class EditedMigration(Exception):
    """A migration file changed after a database applied it."""


def migration_files(sql_dir: Path = SQL_DIR) -> list[Path]:
    """The migration files, in the order they apply."""
    files = [path for path in sql_dir.iterdir() if _NAME.match(path.name)]
    return sorted(files, key=lambda path: path.name)


def checksum(path: Path) -> str:
    """The SHA-256 of a migration file, as recorded when it is applied."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def apply_migrations(database_url: str, sql_dir: Path = SQL_DIR) -> list[str]:
    """Apply every migration not yet recorded; return the names applied."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
        await connection.execute(_CREATE_TABLE)
        recorded = {row["name"]: row["checksum"] for row in await connection.fetch(_APPLIED)}
        files = migration_files(sql_dir)
        await _check_applied(connection, files, recorded)
        applied: list[str] = []
        for path in files:
            if path.name in recorded:
                continue
            async with connection.transaction():
                await connection.execute(path.read_text(encoding="utf-8"))
                await connection.execute(_RECORD, path.name, checksum(path))
            applied.append(path.name)
        return applied
    finally:
        await connection.close()


async def _check_applied(
    connection: asyncpg.Connection, files: list[Path], recorded: dict[str, str | None]
) -> None:
    """Refuse to go on if an applied file was edited since; record missing checksums."""
    for path in files:
        if path.name not in recorded:
            continue
        now = checksum(path)
        if recorded[path.name] is None:
            await connection.execute(_BACKFILL, path.name, now)
        elif recorded[path.name] != now:
            raise EditedMigration(
                f"{path.name} was changed after this database applied it; migrations are never "
                "edited once applied: restore the file and put the change in a new migration."
            )
