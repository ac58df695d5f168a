"""The scope table (app/http/permissions.py) against the routes the app really has: every route
named, and for every route and every scope, a key of that scope allowed or refused as the table
says, over HTTP, in the API and in the pages signed in with the key (and the pages only a
person may use refused to every key's session)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from agentlasso.domain.scopes import Scope, includes
from agentlasso.http.permissions import PEOPLE_ONLY, RULES, is_open, refusal
from agentlasso.services.api_keys import create_key_for_project_name
from tests.support.routes import AppRoute, every_route
from tests.support.web import browser, shown_text, signed_in_csrf

ROUTES = every_route()
API_ROUTES = [route for route in ROUTES if route.door == "api_key"]
PAGE_ROUTES = [route for route in ROUTES if route.door == "session"]
# A page can be signed in to with every scope but `ingest` (tests/integration/test_key_scopes.py).
PAGE_SCOPES = [Scope.ADMIN, Scope.CI, Scope.READ]
WRITES = {"POST", "PUT", "PATCH", "DELETE"}


def test_every_route_behind_a_key_or_a_session_has_a_rule() -> None:
    unnamed = [route.key for route in ROUTES if route.door != "open" and route.key not in RULES]
    assert not unnamed, "routes without a scope in app/http/permissions.py:\n" + "\n".join(unnamed)


def test_every_rule_names_a_route_that_exists() -> None:
    served = {route.key for route in ROUTES}
    assert not [key for key in RULES if key not in served], "rules for routes that do not exist"


def test_only_the_open_paths_are_open() -> None:
    open_routes = {route.path for route in ROUTES if route.door == "open"}
    assert {path for path in open_routes if not is_open(path)} == set()
    assert [route.key for route in ROUTES if route.door != "open" and is_open(route.path)] == []


# The reads only an admin may make: the audit log names who did what, and from which address;
# the members page lists the organisation's people by email.
ADMIN_READS = {"GET /api/v1/audit-log", "GET /settings/audit-log", "GET /settings/members"}


def test_reading_needs_read_and_writing_more() -> None:
    for route in API_ROUTES + PAGE_ROUTES:
        rule = RULES[route.key]
        if route.key in ADMIN_READS:
            assert rule.scope == Scope.ADMIN, route.key
        elif route.method == "GET":
            assert rule.scope == Scope.READ, route.key
        elif route.method in WRITES and route.path not in ("/logout",) and "/ui/" not in route.path:
            assert rule.scope != Scope.READ, route.key


@pytest_asyncio.fixture(scope="module")
async def keys(database_url: str) -> dict[Scope, str]:
    """A key of every scope, all of one project."""
    project = f"scopes-{uuid.uuid4().hex[:12]}"
    made = {
        scope: await create_key_for_project_name(database_url, project, scope) for scope in Scope
    }
    return {scope: new.key for scope, new in made.items()}


@pytest_asyncio.fixture(scope="module")
async def http(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        yield client


@pytest_asyncio.fixture(scope="module")
async def sessions(base_url: str, keys: dict[Scope, str]) -> AsyncIterator[dict[Scope, Signed]]:
    """A browser signed in with each scope's key."""
    async with contextlib.AsyncExitStack() as stack:
        signed = {}
        for scope in PAGE_SCOPES:
            web = await stack.enter_async_context(browser(base_url))
            signed[scope] = Signed(web, await signed_in_csrf(web, keys[scope]))
        yield signed


class Signed:
    """A signed-in browser and its CSRF token."""

    def __init__(self, web: httpx.AsyncClient, csrf: str) -> None:
        self.web = web
        self.csrf = csrf


async def call_api(http: httpx.AsyncClient, route: AppRoute, key: str) -> httpx.Response:
    """The route asked with the key: ids nobody has, an empty JSON object as a body."""
    path, headers = route.example_path(), {"x-api-key": key}
    if route.method not in WRITES:
        return await http.request(route.method, path, headers=headers)
    headers["content-type"] = "application/json"
    return await http.request(route.method, path, headers=headers, content=b"{}")


@pytest.mark.parametrize("route", API_ROUTES, ids=lambda route: route.key)
async def test_each_scope_is_allowed_or_refused_as_the_table_says(
    route: AppRoute, http: httpx.AsyncClient, keys: dict[Scope, str]
) -> None:
    rule = RULES[route.key]
    wrong = []
    for scope in Scope:
        answer = await call_api(http, route, keys[scope])
        if includes(scope, rule.scope):
            if answer.status_code in (401, 403):
                wrong.append(f"{scope}: refused, {answer.status_code} {answer.text[:200]}")
        elif not is_refusal(answer, refusal(scope, rule)):
            wrong.append(f"{scope}: not refused, {answer.status_code} {answer.text[:200]}")
    assert not wrong, "\n".join(wrong)


def is_refusal(answer: httpx.Response, sentence: str) -> bool:
    """A 403 problem+json whose detail is the sentence."""
    kind = answer.headers.get("content-type", "")
    if answer.status_code != 403 or not kind.startswith("application/problem+json"):
        return False
    body = answer.json()
    return bool(body["status"] == 403 and body["detail"] == sentence)


@pytest.mark.parametrize("route", PAGE_ROUTES, ids=lambda route: route.key)
async def test_each_page_is_shown_or_refused_as_the_table_says(
    route: AppRoute, base_url: str, keys: dict[Scope, str], sessions: dict[Scope, Signed]
) -> None:
    rule = RULES[route.key]
    wrong = []
    for scope in PAGE_SCOPES:
        async with contextlib.AsyncExitStack() as stack:
            signed = sessions[scope]
            if route.key == "POST /logout":  # it would end the session the other pages use
                web = await stack.enter_async_context(browser(base_url))
                signed = Signed(web, await signed_in_csrf(web, keys[scope]))
            answer = await signed.web.request(
                route.method, route.example_path(), headers={"x-csrf-token": signed.csrf}
            )
        location = answer.headers.get("location", "")
        if rule.people_only:
            if answer.status_code != 403 or PEOPLE_ONLY not in shown_text(answer.text):
                wrong.append(f"{scope}: a key's session not refused, {answer.status_code}")
        elif includes(scope, rule.scope):
            if answer.status_code in (401, 403) or location.startswith("/login?"):
                wrong.append(f"{scope}: refused, {answer.status_code} {location}")
        elif answer.status_code != 403 or refusal(scope, rule) not in shown_text(answer.text):
            wrong.append(f"{scope}: not refused, {answer.status_code} {location}")
    assert not wrong, "\n".join(wrong)
