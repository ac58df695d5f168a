"""First start of `agentlasso dev`: a `default` project and a key kept in the data directory,
and an owner of the `default` organisation whom the printed link signs in."""

from __future__ import annotations

import os
from pathlib import Path

from agentlasso.db import api_keys, projects
from agentlasso.db.pool import connect
from agentlasso.domain.audit import Caller, CliActor
from agentlasso.domain.scopes import Scope
from agentlasso.services.api_keys import create_key, hash_key

DEV_PROJECT = "default"
DEV_CALLER = Caller(actor=CliActor(command="dev"))
# The demo organisation's owner (example.com is reserved: no mail can reach anyone there).
DEV_OWNER_EMAIL = "owner@example.com"


async def ensure_dev_key(database_url: str, key_file: Path) -> str:
    """The dev key from `key_file` if it still works, else a new one written there."""
    kept = _read_kept_key(key_file)
    connection = await connect(database_url)
    try:
        if kept and await api_keys.active_key(connection, hash_key(kept)) is not None:
            return kept
        async with connection.transaction():
            project_id = await projects.ensure_project(connection, DEV_PROJECT)
            key = (await create_key(connection, project_id, Scope.ADMIN, DEV_CALLER)).key
    finally:
        await connection.close()
    write_private(key_file, key)
    return key


async def dev_sign_in_token(database_url: str) -> str:
    """A one-time sign-in link's token (`/login?token=...`) that signs the demo organisation's
    owner in to the `default` project, the owner made on the first start."""
    from agentlasso.db import users
    from agentlasso.services.web_sessions import create_login_link_token

    connection = await connect(database_url)
    try:
        async with connection.transaction():
            project_id = await projects.ensure_project(connection, DEV_PROJECT)
            organisation_id = await users.ensure_organisation(connection, DEV_PROJECT)
            owner_id = await users.user_id_by_email(connection, DEV_OWNER_EMAIL)
            if owner_id is None:
                owner_id = await users.insert_user(connection, DEV_OWNER_EMAIL)
            await users.set_membership(connection, owner_id, organisation_id, "owner")
            return await create_login_link_token(connection, project_id, owner_id)
    finally:
        await connection.close()


def _read_kept_key(path: Path) -> str | None:
    if not path.exists():
        return None
    make_private(path)
    return path.read_text(encoding="utf-8").strip()


def make_private(path: Path) -> None:
    """Readable and writable by its owner only, whatever it was before (it holds a secret)."""
    os.chmod(path, 0o600)


def write_private(path: Path, text: str) -> None:
    """Write a secret to a file only its owner can read, even a file that existed before."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    # The mode above applies only to a new file; an existing one keeps its own until this.
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
