"""Scoped API keys as people meet them: today's keys become admin, `keys create --scope`, the
403 a key beyond its scope gets, and Settings listing, creating and signing in with scoped keys.
(Every route under every scope: tests/integration/test_route_scopes.py.)"""

from __future__ import annotations

import re
import secrets
import shutil
from pathlib import Path

import asyncpg
import httpx

from agentlasso.db.migrations import SQL_DIR, apply_migrations, migration_files
from agentlasso.domain.scopes import Scope
from agentlasso.services.api_keys import hash_key, live_key, new_key
from tests.integration.test_cli_and_probes import agentlasso
from tests.support.api import create_dataset
from tests.support.assertions import assert_problem
from tests.support.databases import (
    ServerUrls,
    drop_database,
    empty_database,
    key_of_scope,
    new_project_key,
)
from tests.support.web import browser, hidden_field, shown_text, sign_in, signed_in_csrf

SCOPES_MIGRATION = "0024_api_key_scopes.sql"


async def test_keys_made_before_scopes_become_admin_and_keep_working(
    server_urls: ServerUrls, tmp_path: Path
) -> None:
    before = tmp_path / "sql"
    before.mkdir()
    for path in migration_files():
        if path.name < SCOPES_MIGRATION:
            shutil.copy(path, before / path.name)
    url = await empty_database(server_urls.postgres_url)
    try:
        await apply_migrations(url, before)
        key = new_key()
        connection = await asyncpg.connect(url)
        try:
            project_id = await connection.fetchval(
                "INSERT INTO projects (name) VALUES ('old') RETURNING id"
            )
            await connection.execute(
                "INSERT INTO api_keys (project_id, prefix, key_hash) VALUES ($1, $2, $3)",
                project_id, key[:11], hash_key(key),
            )  # fmt: skip
            assert SCOPES_MIGRATION in await apply_migrations(url, SQL_DIR)
            found = await live_key(connection, key)
        finally:
            await connection.close()
        assert found is not None and found.project_id == project_id
        assert found.scope == Scope.ADMIN
    finally:
        await drop_database(server_urls.postgres_url, url)


async def test_keys_create_makes_a_key_of_the_scope_asked_and_admin_by_default(
    database_url: str, anonymous: httpx.AsyncClient
) -> None:
    made = agentlasso(database_url, "keys", "create", "--project", "scoped", "--scope", "read")
    assert made.returncode == 0, made.stderr
    assert "of scope 'read'" in made.stdout
    read_key = made.stdout.strip().splitlines()[-1]
    headers = {"x-api-key": read_key}
    assert (await anonymous.get("/api/v1/datasets", headers=headers)).status_code == 200
    refused = await anonymous.post("/api/v1/datasets", headers=headers, json={"name": "x"})
    assert_problem(refused, 403)
    assert (
        refused.json()["detail"] == 'This key\'s scope is "read"; creating a dataset needs "admin".'
    )
    default = agentlasso(database_url, "keys", "create", "--project", "scoped")
    assert "of scope 'admin'" in default.stdout
    wrong = agentlasso(database_url, "keys", "create", "--project", "scoped", "--scope", "root")
    assert wrong.returncode == 2
    assert "invalid choice: 'root'" in wrong.stderr


async def test_a_key_beyond_its_scope_is_a_403_naming_the_scope_before_any_lookup(
    client: httpx.AsyncClient, api_key: str, database_url: str, anonymous: httpx.AsyncClient
) -> None:
    ci = {"x-api-key": await key_of_scope(database_url, api_key, Scope.CI)}
    body = {"name": "bot", "url": "http://127.0.0.1:9/agent"}
    refused = await anonymous.post("/api/v1/agents", headers=ci, json=body)
    assert_problem(refused, 403)
    assert refused.json()["detail"] == 'This key\'s scope is "ci"; creating an agent needs "admin".'
    # Another project's dataset, or none: the same 403, so the refusal tells nothing of it.
    theirs = await create_dataset(client)
    other_ci = {"x-api-key": await new_project_key(database_url, scope=Scope.CI)}
    for dataset_id in (theirs["id"], "8f0e6a9e-0000-4000-8000-000000000000"):
        deleting = await anonymous.delete(f"/api/v1/datasets/{dataset_id}", headers=other_ci)
        assert deleting.status_code == 403
        assert deleting.json()["detail"].endswith('deleting a dataset needs "admin".')
    # Within its scope, another project's object stays a 404.
    reading = await anonymous.get(f"/api/v1/datasets/{theirs['id']}", headers=other_ci)
    assert_problem(reading, 404)
    no_key = await anonymous.post("/api/v1/agents", json=body)
    assert_problem(no_key, 401)


async def test_settings_creates_a_key_of_the_scope_chosen_and_lists_each_keys_scope(
    base_url: str, api_key: str, anonymous: httpx.AsyncClient
) -> None:
    async with browser(base_url) as web:
        csrf = await signed_in_csrf(web, api_key)
        form = (await web.get("/settings")).text
        assert re.search(r'<option value="ci" selected>', form), "ci is the form's choice"
        fields = {"csrf_token": csrf, "form_id": secrets.token_urlsafe(16), "scope": "read"}
        created = await web.post("/settings/keys", data=fields)
        assert created.status_code == 200
        assert "Your new API key, of scope read" in shown_text(created.text)
        read_key = hidden_value(created.text, "new_key")
        listed = (await web.get("/settings")).text
        rows = re.findall(r"<code>(al_[^<]+)…</code></td>\s*<td>(\w+)</td>", listed)
        assert sorted(scope for _, scope in rows) == ["admin", "read"]
        assert (read_key[:11], "read") in [(prefix, scope) for prefix, scope in rows]
        fields = {**fields, "scope": "root", "form_id": secrets.token_urlsafe(16)}
        wrong = await web.post("/settings/keys", data=fields)
        assert wrong.status_code == 422
        assert "Choose the key's scope" in shown_text(wrong.text)
    headers = {"x-api-key": read_key}
    assert (await anonymous.get("/api/v1/eval-runs", headers=headers)).status_code == 200


def hidden_value(page: str, element_id: str) -> str:
    """The value of the input with this id."""
    found = re.search(rf'id="{element_id}"[^>]*value="([^"]*)"', page)
    assert found, f"no input {element_id!r}"
    return found.group(1)


async def test_a_read_key_sees_the_pages_and_every_write_is_refused_on_the_page(
    base_url: str, api_key: str, client: httpx.AsyncClient, database_url: str
) -> None:
    dataset = await create_dataset(client, name="Refunds")
    read_key = await key_of_scope(database_url, api_key, Scope.READ)
    async with browser(base_url) as web:
        csrf = await signed_in_csrf(web, read_key)
        listing = await web.get("/datasets")
        assert "Refunds" in shown_text(listing.text)
        assert "Key scope: read" in shown_text(listing.text)
        renamed = await web.post(
            f"/datasets/{dataset['id']}", data={"csrf_token": csrf, "name": "Mine now"}
        )
        assert renamed.status_code == 403
        assert 'This key\'s scope is "read"; changing a dataset needs "admin".' in shown_text(
            renamed.text
        )
        assert (await client.get(f"/api/v1/datasets/{dataset['id']}")).json()["name"] == "Refunds"


async def test_an_ingest_key_cannot_sign_in(base_url: str, api_key: str, database_url: str) -> None:
    ingest = await key_of_scope(database_url, api_key, Scope.INGEST)
    async with browser(base_url) as web:
        answer = await sign_in(web, ingest)
        assert answer.status_code == 422
        assert 'This key\'s scope is "ingest": it only sends traces.' in shown_text(answer.text)
        assert hidden_field(answer.text, "login_token")
        assert (await web.get("/datasets")).status_code == 303, "not signed in"
