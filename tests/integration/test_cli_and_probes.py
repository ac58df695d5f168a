"""`agentlasso keys` and `agentlasso migrate` as commands, and the probes and schema."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import httpx

from agentlasso.db import workers as worker_rows
from tests.support.assertions import assert_problem

ROOT = Path(__file__).resolve().parents[2]


def agentlasso(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentlasso.cli", *args], cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


async def test_keys_create_prints_the_key_alone_on_its_last_line_and_revoke_kills_it(
    database_url: str, anonymous: httpx.AsyncClient
) -> None:
    created = agentlasso(database_url, "keys", "create", "--project", "cli-project")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("al_") and " " not in key and len(key) >= 40
    headers = {"authorization": f"Bearer {key}"}
    assert (await anonymous.get("/api/v1/datasets", headers=headers)).status_code == 200

    again = agentlasso(database_url, "keys", "create", "--project", "cli-project")
    second = again.stdout.strip().splitlines()[-1]
    assert second != key, "a second key for the same project"

    revoked = agentlasso(database_url, "keys", "revoke", key[:11])
    assert revoked.returncode == 0, revoked.stderr
    assert_problem(await anonymous.get("/api/v1/datasets", headers=headers), 401)
    still = await anonymous.get("/api/v1/datasets", headers={"x-api-key": second})
    assert still.status_code == 200, "only the revoked key stops working"

    unknown = agentlasso(database_url, "keys", "revoke", "al_nothing1")
    assert unknown.returncode == 1 and "No active key" in unknown.stderr


def test_migrate_reports_nothing_left_to_apply(database_url: str) -> None:
    done = agentlasso(database_url, "migrate")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("0 migration(s) applied")


async def test_health_ready_and_the_openapi_schema(anonymous: httpx.AsyncClient) -> None:
    assert (await anonymous.get("/health")).json() == {"status": "ok"}
    ready = await anonymous.get("/ready")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ok", "database": "ok", "redis": "ok"}
    schema = (await anonymous.get("/schema/openapi.json")).json()
    assert schema["openapi"].startswith("3.1")
    for path in ("/api/v1/datasets", "/api/v1/eval-runs", "/api/v1/eval-run-results",
                 "/api/v1/agents", "/api/v1/datasets/{dataset_id}/test-cases/import"):  # fmt: skip
        assert path in schema["paths"], path


async def test_a_project_sees_workers_without_their_host_or_pid(
    database_url: str, api_process_url: str, api_key: str
) -> None:
    """A worker's host and pid are the operator's: the API's default hides them from tenants."""
    host, pid = "worker-host-7", 4_194_301
    worker_id = f"{host}:{pid}:abc123"
    connection = await asyncpg.connect(database_url)
    try:
        await worker_rows.beat(connection, worker_id, host, pid, 10)
        async with httpx.AsyncClient(base_url=api_process_url, timeout=30) as http:
            answer = await http.get("/api/v1/workers", headers={"x-api-key": api_key})
    finally:
        await worker_rows.forget(connection, worker_id)
        await connection.close()
    assert answer.status_code == 200, answer.text
    items = answer.json()["items"]
    assert items, "the worker is listed"
    for listed in items:
        assert set(listed) == {"id", "started_at", "last_heartbeat_at", "chunks_held"}, listed
    assert host not in answer.text and str(pid) not in answer.text
