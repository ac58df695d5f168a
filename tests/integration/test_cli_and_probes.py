"""`agentlasso keys` and `agentlasso migrate` as commands, and the probes and schema."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.assertions import assert_problem

ROOT = Path(__file__).resolve().parents[2]


def agentlasso(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], cwd=ROOT,
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
