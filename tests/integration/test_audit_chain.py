"""The audit log stays append-only: the database refuses edits, concurrent writers keep one
chain, and an edit made behind the triggers' back is found at the entry it touched."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import httpx
import msgspec
import pytest
import pytest_asyncio

from agentlasso.db.audit_log import entries_in_chain_order
from agentlasso.db.pool import connect
from agentlasso.domain.audit import GENESIS_HASH, entry_hash
from agentlasso.services.audit import ChainCheck, verify_chain
from tests.integration.test_audit_log import audit_entries
from tests.support.api import create_dataset
from tests.support.databases import new_project_key
from tests.support.web import project_of

ROOT = Path(__file__).resolve().parents[2]


@pytest_asyncio.fixture
async def database(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection as the app opens one (the same role, the same codecs)."""
    connection = await connect(database_url)
    yield connection
    await connection.close()


async def verified(database: asyncpg.Connection, api_key: str) -> ChainCheck:
    """What verifying the key's project's log finds."""
    return await verify_chain(database, await project_of(database, api_key))


async def add_agents(client: httpx.AsyncClient, count: int) -> None:
    """`count` more entries in the project's log, one agent each."""
    for number in range(count):
        body = {"name": f"agent {number}", "url": "http://127.0.0.1:9/agent"}
        assert (await client.post("/api/v1/agents", json=body)).status_code == 201


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_log SET action = 'dataset.deleted' WHERE project_id = $1",
        "DELETE FROM audit_log WHERE project_id = $1",
    ],
)
async def test_the_database_refuses_to_edit_or_delete_an_entry(
    client: httpx.AsyncClient, api_key: str, database: asyncpg.Connection, statement: str
) -> None:
    project_id = await project_of(database, api_key)
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
        await database.execute(statement, project_id)
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
        await database.execute("TRUNCATE audit_log")
    assert len(await audit_entries(client)) == 1
    assert (await verified(database, api_key)).broken is None


async def test_fifty_changes_at_once_keep_one_unbroken_chain(
    client: httpx.AsyncClient, api_key: str, database: asyncpg.Connection
) -> None:
    datasets = [await create_dataset(client, name=f"d{number}") for number in range(25)]
    agents = [{"name": f"a{number}", "url": "http://127.0.0.1:9/agent"} for number in range(25)]
    answers = await asyncio.gather(
        *(client.delete(f"/api/v1/datasets/{dataset['id']}") for dataset in datasets),
        *(client.post("/api/v1/agents", json=body) for body in agents),
    )
    assert sorted(answer.status_code for answer in answers) == [201] * 25 + [204] * 25
    entries = await audit_entries(client)
    assert [entry["seq"] for entry in entries] == list(range(51, 0, -1))
    for newer, older in itertools.pairwise(entries):
        assert newer["prev_hash"] == older["hash"]
    check = await verified(database, api_key)
    assert check.broken is None and check.held_seq == 51
    assert check.held_hash is not None and check.held_hash.hex() == entries[0]["hash"]


async def superuser_edit(database: asyncpg.Connection, statement: str, *args: Any) -> None:
    """Run a statement as a superuser who has turned the triggers off for their session."""
    async with database.transaction():
        await database.execute("SET LOCAL session_replication_role = replica")
        await database.execute(statement, *args)


async def test_an_entry_edited_behind_the_trigger_is_found_at_that_entry(
    client: httpx.AsyncClient, api_key: str, database: asyncpg.Connection
) -> None:
    await add_agents(client, 4)
    project_id = await project_of(database, api_key)
    await superuser_edit(
        database,
        'UPDATE audit_log SET changes = \'{"name": "innocent"}\' WHERE project_id = $1 AND seq = 3',
        project_id,
    )
    check = await verify_chain(database, project_id)
    assert check.broken is not None and check.broken.seq == 3
    assert check.broken.reason == "its content is not what was recorded"
    assert check.held_seq == 2


async def test_an_entry_removed_behind_the_trigger_is_found_where_it_was(
    client: httpx.AsyncClient, api_key: str, database: asyncpg.Connection
) -> None:
    await add_agents(client, 4)
    project_id = await project_of(database, api_key)
    await superuser_edit(
        database, "DELETE FROM audit_log WHERE project_id = $1 AND seq = 2", project_id
    )
    check = await verify_chain(database, project_id)
    assert check.broken is not None and check.broken.seq == 3
    assert check.broken.reason == "entry 2 is missing"


async def test_an_entry_rewritten_with_a_fresh_hash_breaks_the_next_link(
    client: httpx.AsyncClient, api_key: str, database: asyncpg.Connection
) -> None:
    await add_agents(client, 4)
    project_id = await project_of(database, api_key)
    [entry] = [each for each in await audit_entries(client) if each["seq"] == 3]
    forged = await forged_hash(database, project_id, 3, {"name": "innocent"})
    await superuser_edit(
        database,
        'UPDATE audit_log SET changes = \'{"name": "innocent"}\', entry_hash = $2 '
        "WHERE project_id = $1 AND seq = 3",
        project_id,
        forged,
    )
    assert forged.hex() != entry["hash"]
    check = await verify_chain(database, project_id)
    assert check.broken is not None and check.broken.seq == 4
    assert check.broken.reason == "it does not follow the entry before it"


async def forged_hash(
    database: asyncpg.Connection, project_id: UUID, seq: int, changes: dict[str, Any]
) -> bytes:
    """The hash a forger would compute for entry `seq` with other changes."""
    [entry] = await entries_in_chain_order(database, project_id, seq - 1, 1)
    edited = msgspec.structs.replace(entry, changes=changes)
    return entry_hash(entry.prev_hash, edited)


def agentlasso(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentlasso.cli", *args], cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


async def test_audit_verify_says_whether_the_log_holds_and_where_it_breaks(
    database_url: str, database: asyncpg.Connection
) -> None:
    name = f"verify-{os.urandom(4).hex()}"
    assert agentlasso(database_url, "keys", "create", "--project", name).returncode == 0
    assert agentlasso(database_url, "keys", "create", "--project", name).returncode == 0
    holds = agentlasso(database_url, "audit", "verify", "--project", name)
    assert holds.returncode == 0, holds.stderr
    assert f"The audit log of '{name}' holds: 2 entries hold" in holds.stdout
    project_id = await database.fetchval("SELECT id FROM projects WHERE name = $1", name)
    await superuser_edit(
        database,
        "UPDATE audit_log SET ip = '10.0.0.1' WHERE project_id = $1 AND seq = 1",
        project_id,
    )
    broken = agentlasso(database_url, "audit", "verify", "--project", name)
    assert broken.returncode == 1
    assert "broken at entry 1: its content is not what was recorded" in broken.stdout
    unknown = agentlasso(database_url, "audit", "verify", "--project", "no-such-project")
    assert unknown.returncode == 1 and "No project is called" in unknown.stderr


async def test_the_first_entry_follows_nothing(
    database_url: str, database: asyncpg.Connection
) -> None:
    key = await new_project_key(database_url)
    check = await verified(database, key)
    assert check.held_seq == 1 and check.broken is None
    prev = await database.fetchval(
        "SELECT prev_hash FROM audit_log WHERE project_id = $1", await project_of(database, key)
    )
    assert bytes(prev) == GENESIS_HASH
