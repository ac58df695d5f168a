"""Project API keys: both header forms, missing, unknown, revoked, and another project's."""

from __future__ import annotations

import httpx

from agentlasso.services.api_keys import revoke_key_by_prefix
from tests.support.api import create_dataset
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key


async def test_no_key_is_401(anonymous: httpx.AsyncClient) -> None:
    body = assert_problem(await anonymous.get("/api/v1/datasets"), 401)
    assert "x-api-key" in body["detail"]


async def test_unknown_key_is_401(anonymous: httpx.AsyncClient) -> None:
    for key in ("al_" + "x" * 43, "not-even-a-key", ""):
        response = await anonymous.get("/api/v1/datasets", headers={"x-api-key": key})
        assert_problem(response, 401)


async def test_both_header_forms_are_accepted(anonymous: httpx.AsyncClient, api_key: str) -> None:
    by_header = await anonymous.get("/api/v1/datasets", headers={"x-api-key": api_key})
    by_bearer = await anonymous.get(
        "/api/v1/datasets", headers={"authorization": f"Bearer {api_key}"}
    )
    assert by_header.status_code == 200, by_header.text
    assert by_bearer.status_code == 200, by_bearer.text


async def test_a_basic_authorization_header_is_not_a_key(
    anonymous: httpx.AsyncClient, api_key: str
) -> None:
    response = await anonymous.get(
        "/api/v1/datasets", headers={"authorization": f"Basic {api_key}"}
    )
    assert_problem(response, 401)


async def test_revoked_key_stops_working_at_once(
    anonymous: httpx.AsyncClient, database_url: str
) -> None:
    key = await new_project_key(database_url)
    headers = {"x-api-key": key}
    assert (await anonymous.get("/api/v1/datasets", headers=headers)).status_code == 200
    await revoke_key_by_prefix(database_url, key[:11])
    assert_problem(await anonymous.get("/api/v1/datasets", headers=headers), 401)


async def test_another_projects_objects_are_404_never_403(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient, database_url: str
) -> None:
    dataset = await create_dataset(client)
    case = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "hi"})
    other = {"x-api-key": await new_project_key(database_url)}
    urls = [
        ("GET", f"/api/v1/datasets/{dataset['id']}"),
        ("PATCH", f"/api/v1/datasets/{dataset['id']}"),
        ("DELETE", f"/api/v1/datasets/{dataset['id']}"),
        ("GET", f"/api/v1/datasets/{dataset['id']}/test-cases"),
        ("POST", f"/api/v1/datasets/{dataset['id']}/test-cases"),
        ("GET", f"/api/v1/datasets/{dataset['id']}/test-cases/export"),
        ("GET", f"/api/v1/test-cases/{case.json()['id']}"),
        ("PATCH", f"/api/v1/test-cases/{case.json()['id']}"),
        ("DELETE", f"/api/v1/test-cases/{case.json()['id']}"),
    ]
    for method, url in urls:
        body = {"input": "x"} if method == "POST" else {} if method == "PATCH" else None
        response = await anonymous.request(method, url, headers=other, json=body)
        assert_problem(response, 404)
    listing = await anonymous.get("/api/v1/datasets", headers=other)
    assert listing.json()["items"] == []
    imported = await anonymous.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        headers={**other, "content-type": "application/x-ndjson"},
        content=b'{"input": "x"}\n',
    )
    assert_problem(imported, 404)
    # and the owner still sees everything untouched
    assert (await client.get(f"/api/v1/datasets/{dataset['id']}")).status_code == 200
