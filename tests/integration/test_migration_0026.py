"""Migration 0026 on a database with data in it: every project moves into an organisation of
its own, and its keys, datasets and runs are still there and usable through the API."""

from __future__ import annotations

import hashlib
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest_asyncio

from agentlasso.config import Settings
from agentlasso.db.migrations import SQL_DIR, apply_migrations
from agentlasso.server import create_app
from tests.support.accounts import PASSWORD, new_email, new_user_token, set_password
from tests.support.databases import ServerUrls, drop_database, empty_database
from tests.support.servers import serving
from tests.support.web import browser, shown_text, sign_in

FIRST_OF_ACCOUNTS = 26


@dataclass(frozen=True)
class Seeded:
    """What was in the database before the migration."""

    project: str
    key: str
    dataset_id: uuid.UUID
    run_id: uuid.UUID


@pytest_asyncio.fixture
async def migrated_url(server_urls: ServerUrls, tmp_path: Path) -> AsyncIterator[str]:
    """A database at the schema before 0026, then migrated to today's."""
    url = await empty_database(server_urls.postgres_url, "agentlasso_0026")
    before = tmp_path / "sql"
    before.mkdir()
    for path in sorted(SQL_DIR.glob("[0-9][0-9][0-9][0-9]_*.sql")):
        if int(path.name[:4]) < FIRST_OF_ACCOUNTS:
            shutil.copy(path, before / path.name)
    await apply_migrations(url, before)
    try:
        yield url
    finally:
        await drop_database(server_urls.postgres_url, url)


async def seed(url: str, name: str) -> Seeded:
    """A project with a key, a dataset with a case, and a finished CI run, in today's tables."""
    key = f"al_{uuid.uuid4().hex}{uuid.uuid4().hex}"
    dataset_id, case_id, revision_id, run_id = (uuid.uuid4() for _ in range(4))
    connection = await asyncpg.connect(url)
    try:
        async with connection.transaction():
            project_id = await connection.fetchval(
                "INSERT INTO projects (name) VALUES ($1) RETURNING id", name
            )
            await connection.execute(
                "INSERT INTO api_keys (project_id, prefix, key_hash, scope)"
                " VALUES ($1, $2, $3, 'ci')",
                project_id, key[:11], hashlib.sha256(key.encode()).digest(),
            )  # fmt: skip
            await connection.execute(
                "INSERT INTO datasets (id, project_id, name, case_count) VALUES ($1, $2, $3, 1)",
                dataset_id, project_id, f"{name} questions",
            )  # fmt: skip
            await connection.execute(
                "INSERT INTO test_case_revisions (id, test_case_id, dataset_id, revision, input,"
                " checks) VALUES ($1, $2, $3, 1, '\"Where is my refund?\"', '[]')",
                revision_id, case_id, dataset_id,
            )  # fmt: skip
            await connection.execute(
                "INSERT INTO test_cases (id, dataset_id, current_revision_id) VALUES ($1, $2, $3)",
                case_id, dataset_id, revision_id,
            )  # fmt: skip
            await connection.execute(
                "INSERT INTO eval_runs (id, project_id, dataset_id, mode, status, pass_threshold,"
                " total, finished_at) VALUES ($1, $2, $3, 'ci', 'completed', 1, 0, now())",
                run_id, project_id, dataset_id,
            )  # fmt: skip
    finally:
        await connection.close()
    return Seeded(name, key, dataset_id, run_id)


async def test_every_key_dataset_and_run_survives_into_an_organisation_of_its_own(
    server_urls: ServerUrls, migrated_url: str
) -> None:
    seeded = [await seed(migrated_url, f"team-{n}-{uuid.uuid4().hex[:6]}") for n in range(2)]
    await apply_migrations(migrated_url)
    connection = await asyncpg.connect(migrated_url)
    try:
        homes = await connection.fetch(
            "SELECT p.name AS project, o.name AS organisation FROM projects p"
            " JOIN organisations o ON o.id = p.organisation_id"
        )
    finally:
        await connection.close()
    assert sorted((r["project"], r["organisation"]) for r in homes) == sorted(
        (s.project, s.project) for s in seeded
    )
    settings = Settings(
        database_url=migrated_url,
        redis_url=server_urls.redis_url,
        queue_name=f"agentlasso:test:{uuid.uuid4().hex[:12]}",
        secret_key="dGVzdC1rZXktZm9yLWFnZW50bGFzc28tMzItYnl0ZXM=",
    )
    async with serving(create_app(settings)) as base_url:
        for each in seeded:
            await _still_usable(base_url, migrated_url, each)


async def _still_usable(base_url: str, url: str, seeded: Seeded) -> None:
    """The key reads its dataset and run and starts a run; a member of the project's new
    organisation sees the dataset; the key still signs in to the web app."""
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": seeded.key}) as api:
        listed = (await api.get("/api/v1/datasets")).json()["items"]
        assert [item["id"] for item in listed] == [str(seeded.dataset_id)]
        cases = (await api.get(f"/api/v1/datasets/{seeded.dataset_id}/test-cases")).json()
        assert [case["input"] for case in cases["items"]] == ["Where is my refund?"]
        run = await api.get(f"/api/v1/eval-runs/{seeded.run_id}")
        assert run.status_code == 200 and run.json()["status"] == "completed"
        new_run = await api.post("/api/v1/eval-runs", json={"dataset_id": str(seeded.dataset_id)})
        assert new_run.status_code == 201 and new_run.json()["total"] == 1, new_run.text
    email = new_email()
    token = await new_user_token(url, email, seeded.project)
    async with browser(base_url) as web:
        assert (await set_password(web, token, PASSWORD)).status_code == 303
        assert f"{seeded.project} questions" in shown_text((await web.get("/datasets")).text)
    async with browser(base_url) as web:
        assert (await sign_in(web, seeded.key)).status_code == 303
        assert f"{seeded.project} questions" in shown_text((await web.get("/datasets")).text)
