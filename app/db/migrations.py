"""Forward-only migrations: sql/NNNN_name.sql applied in order, each once."""

from __future__ import annotations

import os
import re
from pathlib import Path

import asyncpg

# In a checkout the migrations sit beside the package; an installed image says where they are.
SQL_DIR = Path(os.environ.get("AGENTLASSO_SQL_DIR") or Path(__file__).resolve().parents[2] / "sql")
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# Any fixed number: it serialises concurrent `migrate` runs (API and worker starting together).
_LOCK_KEY = 7_346_221_001

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    name        text PRIMARY KEY,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""


def migration_files(sql_dir: Path = SQL_DIR) -> list[Path]:
    """The migration files, in the order they apply."""
    files = [path for path in sql_dir.iterdir() if _NAME.match(path.name)]
    return sorted(files, key=lambda path: path.name)


async def apply_migrations(database_url: str, sql_dir: Path = SQL_DIR) -> list[str]:
    """Apply every migration not yet recorded; return the names applied."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
        await connection.execute(_CREATE_TABLE)
        done = {row["name"] for row in await connection.fetch("SELECT name FROM schema_migrations")}
        applied: list[str] = []
        for path in migration_files(sql_dir):
            if path.name in done:
                continue
            async with connection.transaction():
                await connection.execute(path.read_text(encoding="utf-8"))
                await connection.execute(
                    "INSERT INTO schema_migrations (name) VALUES ($1)", path.name
                )
            applied.append(path.name)
        return applied
    finally:
        await connection.close()
