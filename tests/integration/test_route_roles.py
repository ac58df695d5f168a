"""The role column of the permission table (app/http/permissions.py) against the routes the app
really has: for every page and every role, a signed-in user shown the page or refused with a 403
page naming the role needed, as the table says; the API refuses a user's session (it is for
keys); a role set for one project overrides the organisation's; and another organisation's
objects are a 404 to every role."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
import pytest_asyncio

from agentlasso.domain.accounts import ROLES, Role, role_includes
from agentlasso.http.permissions import RULES, role_refusal
from agentlasso.services.accounts import create_user_at
from agentlasso.services.api_keys import create_key_for_project_name
from tests.integration.test_route_scopes import ADMIN_READS
from tests.support.accounts import PASSWORD, new_email, set_password
from tests.support.routes import AppRoute, every_route
from tests.support.web import browser, csrf_token, shown_text

ROUTES = every_route()
API_ROUTES = [route for route in ROUTES if route.door == "api_key"]
PAGE_ROUTES = [route for route in ROUTES if route.door == "session"]


class Signed:
    """A signed-in browser and its CSRF token."""

    def __init__(self, web: httpx.AsyncClient, csrf: str) -> None:
        self.web = web
        self.csrf = csrf


async def signed_in_user(web: httpx.AsyncClient, database_url: str, org: str, role: Role) -> str:
    """A new member of the organisation with the role, signed in on `web` (as the link they are
    given does); their session's CSRF token."""
    created = await create_user_at(database_url, new_email(), org, role)
    answer = await set_password(web, created.password_token, PASSWORD)
    assert answer.status_code == 303, answer.text
    return await csrf_token(web)


@pytest.fixture(scope="module")
def organisation() -> str:
    return f"roles-{uuid.uuid4().hex[:12]}"


@pytest_asyncio.fixture(scope="module")
async def users(
    base_url: str, database_url: str, organisation: str
) -> AsyncIterator[dict[Role, Signed]]:
    """A browser signed in as a user of each role, all of one organisation."""
    async with contextlib.AsyncExitStack() as stack:
        signed = {}
        for role in ROLES:
            web = await stack.enter_async_context(browser(base_url))
            signed[role] = Signed(web, await signed_in_user(web, database_url, organisation, role))
        yield signed


def test_every_route_names_a_role_and_reads_need_only_a_viewer() -> None:
    for route in API_ROUTES + PAGE_ROUTES:
        rule = RULES[route.key]
        assert rule.role in ROLES, route.key
        if route.method == "GET" and route.key not in ADMIN_READS:
            assert rule.role == "viewer", route.key


@pytest.mark.parametrize("route", PAGE_ROUTES, ids=lambda route: route.key)
async def test_each_page_is_shown_or_refused_as_the_role_column_says(
    route: AppRoute, base_url: str, database_url: str, organisation: str,
    users: dict[Role, Signed],
) -> None:  # fmt: skip
    rule = RULES[route.key]
    wrong = []
    for role in ROLES:
        async with contextlib.AsyncExitStack() as stack:
            signed = users[role]
            if route.key == "POST /logout":  # it would end the session the other pages use
                web = await stack.enter_async_context(browser(base_url))
                signed = Signed(web, await signed_in_user(web, database_url, organisation, role))
            answer = await signed.web.request(
                route.method, route.example_path(), headers={"x-csrf-token": signed.csrf}
            )
        location = answer.headers.get("location", "")
        if role_includes(role, rule.role):
            if answer.status_code in (401, 403) or location.startswith("/login?"):
                wrong.append(f"{role}: refused, {answer.status_code} {location}")
        elif answer.status_code != 403 or role_refusal(role, rule) not in shown_text(answer.text):
            wrong.append(f"{role}: not refused, {answer.status_code} {location}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("route", API_ROUTES, ids=lambda route: route.key)
async def test_the_api_answers_no_role_only_a_key(
    route: AppRoute, users: dict[Role, Signed]
) -> None:
    for role in ROLES:
        signed = users[role]
        answer = await signed.web.request(
            route.method, route.example_path(), headers={"x-csrf-token": signed.csrf}
        )
        assert answer.status_code == 401, f"{role}: {answer.status_code} {answer.text[:200]}"


async def test_an_htmx_request_beyond_the_role_gets_a_403_the_page_can_show(
    users: dict[Role, Signed],
) -> None:
    viewer = users["viewer"]
    answer = await viewer.web.post(
        "/datasets",
        data={"name": "Not mine to make", "csrf_token": viewer.csrf},
        headers={"hx-request": "true"},
    )
    assert answer.status_code == 403
    assert 'creating a dataset needs the role "member" or above' in shown_text(answer.text)
    assert answer.headers["hx-retarget"] == "#main"


async def test_a_project_role_overrides_the_organisations_role(
    base_url: str, database_url: str, organisation: str
) -> None:
    async with browser(base_url) as web:
        csrf = await signed_in_user(web, database_url, organisation, "viewer")
        refused = await web.post("/datasets", data={"name": "Refunds", "csrf_token": csrf})
        assert refused.status_code == 403
        connection = await asyncpg.connect(database_url)
        try:
            await connection.execute(
                "INSERT INTO project_roles (user_id, project_id, role) "
                "SELECT s.user_id, s.project_id, 'member' FROM web_sessions s "
                "WHERE s.csrf_token = $1",
                csrf,
            )
        finally:
            await connection.close()
        made = await web.post("/datasets", data={"name": "Refunds", "csrf_token": csrf})
        assert made.status_code == 303, made.text


async def test_another_organisations_objects_are_not_found_for_every_role(
    base_url: str, users: dict[Role, Signed], database_url: str
) -> None:
    other = f"other-{uuid.uuid4().hex[:12]}"
    key = (await create_key_for_project_name(database_url, other)).key
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}) as api:
        dataset = (await api.post("/api/v1/datasets", json={"name": "Theirs"})).json()
        case = await api.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases",
            json={"input": "Refund?", "checks": [{"type": "output_contains", "value": "x"}]},
        )
        assert case.status_code == 201, case.text
        for role, signed in users.items():
            for path in (f"/datasets/{dataset['id']}", f"/cases/{case.json()['id']}"):
                seen = await signed.web.get(path)
                assert seen.status_code == 404, f"{role} {path}: {seen.status_code}"
            if role_includes(role, "member"):
                deleting = await signed.web.post(
                    f"/datasets/{dataset['id']}/delete", data={"csrf_token": signed.csrf}
                )
                assert deleting.status_code == 404, f"{role}: {deleting.status_code}"
        still = await api.get(f"/api/v1/datasets/{dataset['id']}")
        assert still.status_code == 200
