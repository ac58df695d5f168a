"""The web app over HTTP, as a browser without JavaScript (and htmx) drives it.

Every test talks to `agentlasso api` as a process of its own, on the run's PostgreSQL and Redis,
and asserts what a person notices: the status, where a redirect lands, the words on the page,
the headers a browser acts on, and what was or was not stored (read back through the API).
Nothing is mocked; agents under test are real HTTP servers on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import html
import json
import re
import secrets
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio

from agentlasso.devstack.bootstrap import dev_sign_in_token
from agentlasso.services.api_keys import revoke_key_by_prefix
from agentlasso.services.preview import NO_AGENT
from agentlasso.services.web_sessions import create_login_link_token, token_hash
from tests.support.agent_servers import ScriptedAgent, hang, raw_answer
from tests.support.api import create_dataset, register_agent
from tests.support.databases import new_project_key
from tests.support.processes import free_port
from tests.support.web import (
    SESSION_COOKIE,
    browser,
    case_fields,
    hidden_field,
    is_same_site,
    lands_on,
    path_of,
    project_of,
    shown_text,
    sign_in,
    signed_in_csrf,
)

OFF_SITE = ["//evil.example", "/\\evil.example", "https://evil.example/", "javascript:alert(1)"]
# A browser drops tabs and line breaks from a URL, so "/\t/evil.example" is "//evil.example".
OFF_SITE_WITH_TAB = [*OFF_SITE, "/\t/evil.example"]
TEXT_CHECK = {"type": "output_contains", "value": "refund"}


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    """The web app as `agentlasso api` serves it, in a process of its own."""
    return api_process_url


@dataclass
class Person:
    """A signed-in browser and the CSRF token its session's forms carry."""

    web: httpx.AsyncClient
    csrf: str

    async def post(self, action: str, /, **fields: Any) -> httpx.Response:
        """Submit a form as the page would (with the session's CSRF token)."""
        return await self.web.post(action, data={"csrf_token": self.csrf, **fields})


@pytest_asyncio.fixture
async def person(base_url: str, api_key: str) -> AsyncIterator[Person]:
    """A browser signed in as the `api_key` project (the `client` fixture's)."""
    async with browser(base_url) as web:
        yield Person(web, await signed_in_csrf(web, api_key))


@pytest_asyncio.fixture
async def database(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection to the test database, to make sign-in links and read what was stored."""
    connection = await asyncpg.connect(database_url)
    yield connection
    await connection.close()


@pytest_asyncio.fixture
async def other_project(base_url: str, database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The API client of a second project."""
    headers = {"x-api-key": await new_project_key(database_url)}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as http:
        yield http


def cookies_set(response: httpx.Response) -> list[str]:
    """Every Set-Cookie header of the answer."""
    return response.headers.get_list("set-cookie")


def session_cookie_set(response: httpx.Response) -> str | None:
    """The Set-Cookie header that gives the browser a session, if any (not one that drops it)."""
    for header in cookies_set(response):
        name, _, rest = header.partition("=")
        value = rest.split(";", 1)[0].strip('"')
        if name.strip() == SESSION_COOKIE and value and "max-age=0" not in header.lower():
            return header
    return None


def attributes_of(cookie_header: str) -> dict[str, str]:
    """A Set-Cookie header's attributes, names lower-cased (flags map to "")."""
    parts = [part.strip() for part in cookie_header.split(";")[1:]]
    pairs = (part.partition("=") for part in parts if part)
    return {name.lower(): value for name, _, value in pairs}


def error_by(page: str, field: str) -> str:
    """The error shown next to the field (its `-error` or `-check` paragraph), as read."""
    paragraph = rf'<p class="field-error" id="{re.escape(field)}-(?:error|check)"[^>]*>(.*?)</p>'
    found = re.search(paragraph, page, re.S)
    assert found, f"no error paragraph by the field {field!r}"
    return shown_text(found.group(1))


def textarea_text(page: str, field: str) -> str:
    """What the text area called `field` holds, as the browser shows it."""
    found = re.search(rf'<textarea[^>]*name="{re.escape(field)}"[^>]*>(.*?)</textarea>', page, re.S)
    assert found, f"no text area {field!r} on the page"
    text = html.unescape(found.group(1))
    return text[1:] if text.startswith("\n") else text  # a browser drops one leading newline


def is_marked_invalid_with_its_error(page: str, field: str) -> bool:
    """Whether the field is marked invalid and names its error as its description (so a screen
    reader reads the error with the field)."""
    tag = re.search(rf'<(?:input|textarea|select)[^>]*\bid="{re.escape(field)}"[^>]*>', page)
    assert tag, f"no field {field!r}"
    described = re.search(r'aria-describedby="([^"]*)"', tag.group(0))
    ids = described.group(1).split() if described else []
    return 'aria-invalid="true"' in tag.group(0) and f"{field}-error" in ids


async def dataset_names(client: httpx.AsyncClient) -> list[str]:
    """The names of the project's datasets, read through the API."""
    response = await client.get("/api/v1/datasets")
    assert response.status_code == 200, response.text
    return [item["name"] for item in response.json()["items"]]


async def case_inputs(client: httpx.AsyncClient, dataset_id: str) -> list[Any]:
    """The inputs of the dataset's cases, read through the API."""
    response = await client.get(f"/api/v1/datasets/{dataset_id}/test-cases")
    assert response.status_code == 200, response.text
    return [item["input"] for item in response.json()["items"]]


async def add_case(client: httpx.AsyncClient, dataset_id: str, text: str, **fields: Any) -> str:
    """A case added through the API; its id."""
    response = await client.post(
        f"/api/v1/datasets/{dataset_id}/test-cases", json={"input": text, **fields}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def is_signed_in(web: httpx.AsyncClient) -> bool:
    """Whether the browser's session opens a page (rather than leading to sign-in)."""
    answer = await web.get("/datasets")
    if answer.status_code == 200:
        return True
    assert path_of(answer).startswith("/login"), answer.headers
    return False


# 1. CSRF


async def wrong_tokens(person: Person, base_url: str, api_key: str) -> list[str | None]:
    """No token, a made-up one, a truncated one, and another session's of the same project."""
    async with browser(base_url) as other_tab:
        other_sessions = await signed_in_csrf(other_tab, api_key)
    return [None, "", "not-the-token", person.csrf[:-1], other_sessions]


def with_token(token: str | None, **fields: str) -> dict[str, str]:
    """Form fields, with this CSRF token (none when None)."""
    return fields if token is None else {"csrf_token": token, **fields}


async def test_a_form_with_a_missing_or_wrong_csrf_token_is_refused_with_a_page_saying_why(
    person: Person, base_url: str, api_key: str
) -> None:
    for token in await wrong_tokens(person, base_url, api_key):
        answer = await person.web.post("/datasets", data=with_token(token, name="forged"))
        assert answer.status_code == 403, token
        assert answer.headers["content-type"].startswith("text/html")
        assert "Request refused" in shown_text(answer.text)
        assert "reload the page and try again" in shown_text(answer.text)


async def test_a_form_with_a_missing_or_wrong_csrf_token_stores_nothing(
    person: Person, client: httpx.AsyncClient, base_url: str, api_key: str
) -> None:
    for token in await wrong_tokens(person, base_url, api_key):
        answer = await person.web.post("/datasets", data=with_token(token, name="forged"))
        assert answer.status_code >= 400, token
    assert await dataset_names(client) == []


async def test_deleting_without_the_csrf_token_keeps_the_dataset(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client, name="keep me")
    answer = await person.web.post(f"/datasets/{dataset['id']}/delete")
    assert answer.status_code >= 400
    assert await dataset_names(client) == ["keep me"]


async def test_the_csrf_token_in_the_htmx_header_is_accepted(person: Person) -> None:
    answer = await person.web.post(
        "/ui/check-json",
        data={"field": "data_context", "data_context": "[1]"},
        headers={"hx-request": "true", "x-csrf-token": person.csrf},
    )
    assert answer.status_code == 200
    assert "Must be a JSON object:" in shown_text(answer.text)


async def test_the_sign_in_form_without_its_own_token_signs_nobody_in(
    base_url: str, api_key: str
) -> None:
    # Another site posting a sign-in form: no login cookie, or a token that is not its own.
    for visited_the_form in (False, True):
        async with browser(base_url) as web:
            if visited_the_form:
                await web.get("/login")
            answer = await web.post("/login", data={"api_key": api_key, "login_token": "guess"})
            assert answer.status_code == 403
            assert "This sign-in form is out of date" in shown_text(answer.text)
            assert session_cookie_set(answer) is None
            assert not await is_signed_in(web)


# 2. Signing in on the way to a page


async def test_a_page_without_a_session_leads_to_sign_in_and_back_to_it(
    base_url: str, api_key: str, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client, name="refund flows")
    page = f"/datasets/{dataset['id']}"
    async with browser(base_url) as web:
        asked = await web.get(page)
        assert asked.status_code == 303
        assert path_of(asked) == f"/login?next={page}"
        form = await web.get(path_of(asked))
        assert form.status_code == 200
        assert hidden_field(form.text, "next") == page
        fields = {
            "api_key": api_key,
            "login_token": hidden_field(form.text, "login_token"),
            "next": hidden_field(form.text, "next"),
        }
        signed_in = await web.post("/login", data=fields)
        assert signed_in.status_code == 303
        assert path_of(signed_in) == page
        landed = await web.get(page)
        assert landed.status_code == 200
        assert "refund flows" in shown_text(landed.text)


async def test_a_searched_page_keeps_its_query_through_sign_in(
    base_url: str, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    async with browser(base_url) as web:
        asked = await web.get(f"/datasets/{dataset['id']}", params={"q": "refund"})
        assert asked.status_code == 303
        form = await web.get(path_of(asked))
        assert hidden_field(form.text, "next") == f"/datasets/{dataset['id']}?q=refund"


async def test_the_home_page_without_a_session_leads_to_sign_in(base_url: str) -> None:
    async with browser(base_url) as web:
        answer = await web.get("/")
        assert answer.status_code == 303
        assert path_of(answer) == "/login?next=/"
        form = await web.get("/login?next=/")
        assert "API key" in shown_text(form.text)


async def test_an_htmx_request_without_a_session_is_sent_to_sign_in(base_url: str) -> None:
    async with browser(base_url) as web:
        asked = await web.get("/datasets", headers={"hx-request": "true"})
        assert asked.status_code == 200
        assert "location" not in asked.headers
        assert asked.headers["hx-redirect"] == "/login?next=/datasets"
        posted = await web.post(
            "/datasets",
            data={"name": "typed before the session ended"},
            headers={"hx-request": "true", "hx-current-url": f"{base_url}/datasets/new"},
        )
        assert posted.status_code == 200
        assert posted.headers["hx-redirect"] == "/login?next=/datasets/new"


async def test_a_live_check_without_a_session_leaves_the_page_as_it_is(base_url: str) -> None:
    """Typing in a field after the session ended must not navigate away from what was typed."""
    async with browser(base_url) as web:
        checked = await web.post(
            "/ui/check-json",
            data={"field": "data_context", "data_context": "{}"},
            headers={"hx-request": "true", "hx-current-url": f"{base_url}/datasets/new"},
        )
        assert checked.status_code == 204
        assert "hx-redirect" not in checked.headers
        assert checked.content == b""


# 3. Another project's objects


async def their_objects(other_project: httpx.AsyncClient) -> tuple[str, str]:
    """A dataset of the other project ("their suite") and its one case; their ids."""
    theirs = await create_dataset(other_project, name="their suite", description="their secret")
    case_id = await add_case(other_project, theirs["id"], "their input", checks=[TEXT_CHECK])
    return str(theirs["id"]), case_id


PAGES_OF_AN_OBJECT = [
    "/datasets/{d}", "/datasets/{d}/delete", "/datasets/{d}/import", "/datasets/{d}/export",
    "/datasets/{d}/cases/new", "/cases/{c}", "/cases/{c}/history",
]  # fmt: skip


def forms_of_an_object(dataset_id: str, case_id: str) -> list[tuple[str, dict[str, str]]]:
    """Every form that changes a dataset or a case, filled in."""
    dataset_page, case_page = f"/datasets/{dataset_id}", f"/cases/{case_id}"
    return [
        (dataset_page, {"name": "renamed by a stranger"}),
        (f"{dataset_page}/delete", {}),
        (f"{dataset_page}/import", {"pasted": '{"input": "planted"}'}),
        (f"{dataset_page}/run", {"form_id": secrets.token_urlsafe(16)}),
        (f"{dataset_page}/cases/new", {"input": "planted", "action": "save"}),
        (case_page, {"input": "changed by a stranger", "action": "save"}),
        (case_page, {"input": "x", "action": "paste", "pasted_reply": "refund"}),
        (f"{case_page}/delete", {}),
    ]


async def test_another_projects_dataset_and_case_pages_answer_404(
    person: Person, other_project: httpx.AsyncClient
) -> None:
    dataset_id, case_id = await their_objects(other_project)
    for template in PAGES_OF_AN_OBJECT:
        answer = await person.web.get(template.format(d=dataset_id, c=case_id))
        assert answer.status_code == 404, template
        assert answer.headers["content-type"].startswith("text/html")
        assert "Not found" in shown_text(answer.text)


async def test_another_projects_pages_answer_as_for_an_id_that_exists_nowhere(
    person: Person, other_project: httpx.AsyncClient
) -> None:
    dataset_id, case_id = await their_objects(other_project)
    nowhere_dataset, nowhere_case = str(uuid.uuid4()), str(uuid.uuid4())
    for template in PAGES_OF_AN_OBJECT:
        theirs = await person.web.get(template.format(d=dataset_id, c=case_id))
        nowhere = await person.web.get(template.format(d=nowhere_dataset, c=nowhere_case))
        assert theirs.status_code >= 400, template
        for their_text in ("their suite", "their secret", "their input"):
            assert their_text not in theirs.text, template
        # Nothing confirms that the object exists.
        assert theirs.status_code == nowhere.status_code, template
        assert shown_text(theirs.text) == shown_text(nowhere.text), template


async def test_another_projects_forms_answer_404(
    person: Person, other_project: httpx.AsyncClient
) -> None:
    dataset_id, case_id = await their_objects(other_project)
    for url, fields in forms_of_an_object(dataset_id, case_id):
        answer = await person.post(url, **fields)
        assert answer.status_code == 404, url
        assert "Not found" in shown_text(answer.text)


async def test_another_projects_forms_change_nothing(
    person: Person, other_project: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    await register_agent(client, f"http://127.0.0.1:{free_port()}/agent")
    dataset_id, case_id = await their_objects(other_project)
    for url, fields in forms_of_an_object(dataset_id, case_id):
        answer = await person.post(url, **fields)
        assert answer.status_code >= 400, url
    assert await dataset_names(other_project) == ["their suite"]
    assert await case_inputs(other_project, dataset_id) == ["their input"]
    assert (await other_project.get("/api/v1/eval-runs")).json()["items"] == []
    assert (await client.get("/api/v1/eval-runs")).json()["items"] == []
    assert await dataset_names(client) == []


async def test_another_projects_datasets_are_not_listed(
    person: Person, client: httpx.AsyncClient, other_project: httpx.AsyncClient
) -> None:
    await create_dataset(client, name="our suite")
    await create_dataset(other_project, name="their suite")
    listing = shown_text((await person.web.get("/datasets")).text)
    assert "our suite" in listing
    assert "their suite" not in listing


# 4. The session cookie


async def test_the_session_cookie_is_httponly_lax_and_for_the_whole_site(
    base_url: str, api_key: str
) -> None:
    async with browser(base_url) as web:
        answer = await sign_in(web, api_key)
        header = session_cookie_set(answer)
        assert header is not None, cookies_set(answer)
        flags = attributes_of(header)
        assert "httponly" in flags
        assert flags.get("samesite", "").lower() in ("lax", "strict")
        assert flags.get("path") == "/"
        # Plain http (as `agentlasso dev` serves): a Secure cookie would never come back.
        assert "secure" not in flags


async def test_the_session_cookie_is_secure_behind_an_https_proxy(
    base_url: str, api_key: str
) -> None:
    async with browser(base_url) as web:
        https = {"x-forwarded-proto": "https"}
        form = await web.get("/login", headers=https)
        # The login cookie is Secure now, so this http client would not send it back by itself.
        login_cookie = form.cookies["agentlasso_login"]
        fields = {"api_key": api_key, "login_token": hidden_field(form.text, "login_token")}
        answer = await web.post(
            "/login", data=fields, headers={**https, "cookie": f"agentlasso_login={login_cookie}"}
        )
        assert answer.status_code == 303, answer.text
        header = session_cookie_set(answer)
        assert header is not None
        assert "secure" in attributes_of(header)
        assert all("secure" in attributes_of(each) for each in cookies_set(form))


async def test_no_cookie_holds_the_api_key(base_url: str, api_key: str) -> None:
    seen: list[str] = []

    async def keep_cookies(response: httpx.Response) -> None:
        seen.extend(cookies_set(response))

    async with browser(base_url) as web:
        web.event_hooks["response"].append(keep_cookies)
        answer = await sign_in(web, api_key)
        assert answer.status_code == 303
        await web.get("/datasets")
        assert any(header.startswith(f"{SESSION_COOKIE}=") for header in seen)
        assert all(api_key not in header for header in seen)
        assert all(api_key[3:20] not in value for value in web.cookies.values())


async def test_signing_out_ends_the_session_even_for_a_kept_cookie(
    base_url: str, person: Person
) -> None:
    kept = person.web.cookies[SESSION_COOKIE]
    answer = await person.post("/logout")
    assert answer.status_code == 303
    assert path_of(answer) == "/login"
    assert SESSION_COOKIE not in person.web.cookies
    home = await person.web.get("/")
    assert path_of(home) == "/login?next=/"
    async with browser(base_url) as replay:
        replay.headers["cookie"] = f"{SESSION_COOKIE}={kept}"
        assert not await is_signed_in(replay)


async def test_signing_in_again_ends_the_browsers_previous_session(
    base_url: str, person: Person, api_key: str
) -> None:
    previous = person.web.cookies[SESSION_COOKIE]
    again = await sign_in(person.web, api_key)
    assert again.status_code == 303
    assert person.web.cookies[SESSION_COOKIE] != previous
    assert await is_signed_in(person.web)
    async with browser(base_url) as replay:
        replay.headers["cookie"] = f"{SESSION_COOKIE}={previous}"
        assert not await is_signed_in(replay)


# 5. Revoking the key a session signed in with


def value_of_input(page: str, element_id: str) -> str:
    """The value of the input with this id."""
    found = re.search(rf'<input id="{re.escape(element_id)}"[^>]*value="([^"]*)"', page)
    assert found, f"no input #{element_id}"
    return html.unescape(found.group(1))


def key_id_of(settings_page: str, key: str) -> str:
    """The id in the Revoke form of the listed key that `key` is."""
    for form in re.findall(r"<form[^>]*/revoke\".*?</form>", settings_page, re.S):
        prefix = re.search(r'aria-label="Revoke ([^"]+)"', form)
        action = re.search(r'action="/settings/keys/([^/"]+)/revoke"', form)
        if prefix and action and key.startswith(html.unescape(prefix.group(1))):
            return action.group(1)
    raise AssertionError("the key is not listed with a Revoke button")


async def test_revoking_the_key_a_session_signed_in_with_ends_that_session(
    base_url: str, api_key: str, person: Person, client: httpx.AsyncClient
) -> None:
    created = await person.post("/settings/keys", form_id=secrets.token_urlsafe(16), scope="admin")
    assert created.status_code == 200
    second_key = value_of_input(created.text, "new_key")
    async with browser(base_url) as admin_web:
        admin = Person(admin_web, await signed_in_csrf(admin_web, second_key))
        settings_page = (await admin.web.get("/settings")).text
        revoked = await admin.post(f"/settings/keys/{key_id_of(settings_page, api_key)}/revoke")
        assert revoked.status_code == 303
        assert not await is_signed_in(person.web)
        assert await is_signed_in(admin.web), "a session of another key goes on"
        assert "revoked" in shown_text((await admin.web.get("/settings")).text)
        assert (await client.get("/api/v1/datasets")).status_code == 401


async def test_revoking_the_key_with_the_cli_ends_its_sessions_too(
    person: Person, api_key: str, database_url: str
) -> None:
    assert await is_signed_in(person.web)
    await revoke_key_by_prefix(database_url, api_key[:11])
    assert not await is_signed_in(person.web)


# 6. The one-time sign-in link: opening it shows a button; only the button signs in


async def link_token(database: asyncpg.Connection, key: str) -> str:
    """A fresh one-time sign-in link's token for the key's project."""
    return await create_login_link_token(database, await project_of(database, key))


async def press_sign_in(web: httpx.AsyncClient, link_page: httpx.Response) -> httpx.Response:
    """Press the button of the page a sign-in link opened, as a browser submits its form."""
    assert link_page.status_code == 200, link_page.text
    fields = {name: hidden_field(link_page.text, name) for name in ("login_token", "token", "next")}
    return await web.post("/login/link", data=fields)


async def follow_link(
    web: httpx.AsyncClient, token: str, **params: str
) -> tuple[httpx.Response, httpx.Response]:
    """Open a sign-in link and press its button: the page, and the button's answer."""
    link_page = await web.get("/login", params={"token": token, **params})
    return link_page, await press_sign_in(web, link_page)


async def test_a_sign_in_link_signs_in_once(
    base_url: str, api_key: str, client: httpx.AsyncClient, database: asyncpg.Connection
) -> None:
    await create_dataset(client, name="linked suite")
    token = await link_token(database, api_key)
    async with browser(base_url) as web:
        _, answer = await follow_link(web, token)
        assert answer.status_code == 303
        assert path_of(answer) == "/"
        assert session_cookie_set(answer) is not None
        assert "linked suite" in shown_text((await web.get("/datasets")).text)
    async with browser(base_url) as again:
        answer = await again.get("/login", params={"token": token})
        assert answer.status_code == 401
        assert "This sign-in link has been used or has expired" in shown_text(answer.text)
        assert session_cookie_set(answer) is None
        assert not await is_signed_in(again)


async def test_opening_a_sign_in_link_uses_nothing_up_and_signs_nobody_in(
    base_url: str, api_key: str, database: asyncpg.Connection
) -> None:
    """A link scanner (or a preview) opening the link, as often as it likes, leaves it for the
    person; what they see names the project they would be signed in to."""
    token = await link_token(database, api_key)
    project_name = await database.fetchval(
        "SELECT name FROM projects WHERE id = $1", await project_of(database, api_key)
    )
    async with browser(base_url) as scanner:
        for _ in range(3):
            opened = await scanner.get("/login", params={"token": token})
            assert opened.status_code == 200
            assert session_cookie_set(opened) is None
            assert f"Sign in to {project_name}" in shown_text(opened.text)
            assert opened.headers["referrer-policy"] == "no-referrer"
        assert not await is_signed_in(scanner)
    used = await database.fetchval(
        "SELECT used_at FROM login_tokens WHERE token_hash = $1", token_hash(token)
    )
    assert used is None
    async with browser(base_url) as person:
        _, answer = await follow_link(person, token)
        assert answer.status_code == 303
        assert await is_signed_in(person)


async def test_another_site_cannot_press_the_sign_in_button_for_a_browser(
    base_url: str, api_key: str, database: asyncpg.Connection
) -> None:
    """Login CSRF: a page elsewhere posting its own link's token signs the browser into
    nothing (it has no login cookie, or cannot know it), and the link stays usable."""
    token = await link_token(database, api_key)
    for visited_the_form in (False, True):
        async with browser(base_url) as web:
            if visited_the_form:
                await web.get("/login")
            forged = {"token": token, "login_token": "guess", "next": "/"}
            answer = await web.post("/login/link", data=forged)
            assert answer.status_code == 403
            assert session_cookie_set(answer) is None
            assert not await is_signed_in(web)
    async with browser(base_url) as web:
        _, answer = await follow_link(web, token)
        assert answer.status_code == 303


async def test_an_expired_sign_in_link_says_so_and_signs_nobody_in(
    base_url: str, api_key: str, database: asyncpg.Connection
) -> None:
    token = await link_token(database, api_key)
    async with browser(base_url) as web:
        link_page = await web.get("/login", params={"token": token})
        await database.execute(
            "UPDATE login_tokens SET expires_at = now() - interval '1 second' "
            "WHERE token_hash = $1",
            token_hash(token),
        )
        for answer in (
            await web.get("/login", params={"token": token}),
            await press_sign_in(web, link_page),
        ):
            assert answer.status_code == 401
            assert "has been used or has expired" in shown_text(answer.text)
            assert "API key" in shown_text(answer.text), "the sign-in form is shown instead"
            assert session_cookie_set(answer) is None
        assert not await is_signed_in(web)


async def test_a_sign_in_forgets_links_that_were_used_or_expired(
    base_url: str, api_key: str, database: asyncpg.Connection
) -> None:
    used, expired, fresh = [await link_token(database, api_key) for _ in range(3)]
    await database.execute(
        "UPDATE login_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1",
        token_hash(expired),
    )
    async with browser(base_url) as web:
        assert (await follow_link(web, used))[1].status_code == 303
    ours = [token_hash(token) for token in (used, expired, fresh)]
    kept = await database.fetch(
        "SELECT token_hash FROM login_tokens WHERE token_hash = ANY($1::bytea[])", ours
    )
    assert [row["token_hash"] for row in kept] == [token_hash(fresh)]
    async with browser(base_url) as web:
        assert (await follow_link(web, fresh))[1].status_code == 303


async def test_an_unknown_sign_in_link_says_so_and_signs_nobody_in(base_url: str) -> None:
    async with browser(base_url) as web:
        login_page = await web.get("/login")
        for token in (secrets.token_urlsafe(32), "x" * 5000):
            answer = await web.get("/login", params={"token": token})
            assert answer.status_code == 401
            assert "has been used or has expired" in shown_text(answer.text)
            assert session_cookie_set(answer) is None
            fields = {"token": token, "login_token": hidden_field(login_page.text, "login_token")}
            pressed = await web.post("/login/link", data=fields)
            assert pressed.status_code == 401
            assert session_cookie_set(pressed) is None
        assert not await is_signed_in(web)


async def test_the_link_agentlasso_dev_prints_signs_in_and_goes_to_next(
    base_url: str, database_url: str
) -> None:
    token = await dev_sign_in_token(database_url)
    async with browser(base_url) as web:
        link_page, answer = await follow_link(web, token, next="/settings")
        assert hidden_field(link_page.text, "next") == "/settings"
        assert answer.status_code == 303
        assert path_of(answer) == "/settings"
        assert (await web.get("/settings")).status_code == 200


# 7. `next` stays on this site


async def as_sent(web: httpx.AsyncClient, method: str, url: str, **options: Any) -> httpx.Response:
    """The answer exactly as the server sent it, the browser's cookies sent along (httpx will not
    even return an answer whose Location it cannot parse, which a browser cleans and follows)."""
    request = web.build_request(method, url, **options)
    async with httpx.AsyncHTTPTransport() as transport:
        response = await transport.handle_async_request(request)
        await response.aread()
    response.request = request
    return response


@pytest.mark.parametrize("target", OFF_SITE_WITH_TAB)
async def test_signing_in_never_leads_off_site(base_url: str, api_key: str, target: str) -> None:
    async with browser(base_url) as web:
        form = await web.get("/login")
        fields = {
            "api_key": api_key,
            "login_token": hidden_field(form.text, "login_token"),
            "next": target,
        }
        answer = await as_sent(web, "POST", "/login", data=fields)
        assert answer.status_code == 303
        assert is_same_site(answer), lands_on(answer)


@pytest.mark.parametrize("target", OFF_SITE_WITH_TAB)
async def test_a_sign_in_link_never_leads_off_site(
    base_url: str, api_key: str, database: asyncpg.Connection, target: str
) -> None:
    token = await link_token(database, api_key)
    async with browser(base_url) as web:
        link_page = await web.get("/login", params={"token": token, "next": target})
        fields = {name: hidden_field(link_page.text, name) for name in ("login_token", "token")}
        answer = await as_sent(web, "POST", "/login/link", data={**fields, "next": target})
        assert answer.status_code == 303
        assert is_same_site(answer), lands_on(answer)


@pytest.mark.parametrize("target", OFF_SITE)
async def test_the_sign_in_form_does_not_carry_an_off_site_next(base_url: str, target: str) -> None:
    async with browser(base_url) as web:
        form = await web.get("/login", params={"next": target})
        assert hidden_field(form.text, "next") == "/"


# 8. Headers, static files, unknown paths


def csp_of(response: httpx.Response) -> dict[str, list[str]]:
    """The Content-Security-Policy's directives and their sources."""
    policy = response.headers.get("content-security-policy", "")
    directives = (part.split() for part in policy.split(";") if part.strip())
    return {name.lower(): sources for name, *sources in directives}


def assert_locked_down(response: httpx.Response) -> None:
    """The headers a page carries: same-origin CSP, no framing, no sniffing, never cached."""
    csp = csp_of(response)
    assert csp.get("default-src") == ["'self'"], csp
    sources = [source for values in csp.values() for source in values]
    assert all(source in ("'self'", "'none'", "data:") for source in sources), csp
    assert "'unsafe-inline'" not in csp.get("script-src", ["'unsafe-inline'"])
    # Both: frame-ancestors for today's browsers, X-Frame-Options for those that predate it.
    assert csp.get("frame-ancestors") == ["'none'"], csp
    assert response.headers.get("x-frame-options") == "DENY", response.headers
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "no-store" in response.headers["cache-control"]


async def test_every_page_is_same_origin_unframable_and_never_cached(
    person: Person, client: httpx.AsyncClient, base_url: str
) -> None:
    dataset = await create_dataset(client)
    case_id = await add_case(client, dataset["id"], "hello")
    pages = [
        "/datasets", "/datasets/new", f"/datasets/{dataset['id']}", f"/cases/{case_id}",
        f"/cases/{case_id}/history", f"/datasets/{dataset['id']}/import", "/runs", "/traces",
        "/settings",
    ]  # fmt: skip
    for url in pages:
        answer = await person.web.get(url)
        assert answer.status_code == 200, url
        assert answer.headers["content-type"].startswith("text/html"), url
        assert_locked_down(answer)
    assert_locked_down(await person.post("/datasets", name=""))  # a form's 422 page
    assert_locked_down(await person.post("/datasets", name="x"))  # a redirect after a form
    async with browser(base_url) as stranger:
        assert_locked_down(await stranger.get("/login"))
        assert_locked_down(await stranger.get("/datasets"))  # the way to sign-in


async def test_error_pages_are_same_origin_unframable_and_never_cached(
    person: Person, base_url: str
) -> None:
    assert_locked_down(await person.web.get(f"/datasets/{uuid.uuid4()}"))
    assert_locked_down(await person.web.post("/datasets", data={"name": "no token"}))
    assert_locked_down(
        await person.web.get(f"/datasets/{uuid.uuid4()}", headers={"hx-request": "1"})
    )
    assert_locked_down(await person.web.put("/datasets", data={"csrf_token": person.csrf}))  # 405
    too_large = {"csrf_token": person.csrf, "name": "x" * (11 * 1024 * 1024)}
    assert_locked_down(await person.web.post("/datasets", data=too_large))  # 413
    async with browser(base_url) as stranger:
        assert_locked_down(await stranger.get("/no-such-page"))
        assert_locked_down(await stranger.get("/static/no-such-file.css"))


async def test_static_files_have_hashed_urls_and_are_cached_for_a_year(
    person: Person, base_url: str
) -> None:
    page = (await person.web.get("/datasets")).text
    urls = [html.unescape(url) for url in re.findall(r'(?:href|src)="(/static/[^"]+)"', page)]
    assert len(urls) >= 3, urls
    async with browser(base_url) as stranger:
        for url in urls:
            digest = url.partition("?v=")[2]
            assert len(digest) >= 8, url
            answer = await stranger.get(url)
            assert answer.status_code == 200, url
            assert hashlib.sha256(answer.content).hexdigest().startswith(digest), url
            cache = answer.headers["cache-control"]
            assert "max-age=31536000" in cache and "immutable" in cache, cache
            assert answer.headers["x-content-type-options"] == "nosniff"
            kind = "text/css" if url.split("?")[0].endswith(".css") else "javascript"
            assert kind in answer.headers["content-type"], url


async def test_a_static_url_of_another_version_is_not_kept_under_that_version(
    base_url: str,
) -> None:
    """During a rolling deploy a page of another release may ask this server for its own
    version of a file: this server's file must not be cached for a year under that URL."""
    async with browser(base_url) as stranger:
        answer = await stranger.get("/static/app.css?v=0123456789ab")
        assert answer.status_code == 200
        assert answer.headers["cache-control"] == "no-cache"
        unversioned = await stranger.get("/static/app.css")
        assert unversioned.headers["cache-control"] == "no-cache"


async def test_an_error_page_asked_for_by_htmx_takes_the_place_of_the_page_content(
    person: Person,
) -> None:
    answer = await person.web.get(f"/datasets/{uuid.uuid4()}", headers={"hx-request": "true"})
    assert answer.status_code == 404
    assert answer.headers["hx-retarget"] == "#main"
    assert answer.headers["hx-reselect"] == "#main"
    assert "Not found" in shown_text(answer.text)


async def test_a_body_a_page_cannot_read_answers_a_page_not_problem_json(person: Person) -> None:
    answer = await person.web.post(
        "/datasets",
        content=b"--x\r\nnot a part",
        headers={
            "content-type": "multipart/form-data; boundary=x",
            "x-csrf-token": person.csrf,
        },
    )
    assert 400 <= answer.status_code < 500
    assert answer.headers["content-type"].startswith("text/html")
    assert "Traceback" not in answer.text


async def test_an_unknown_page_is_an_html_404_page(base_url: str, person: Person) -> None:
    async with browser(base_url) as stranger:
        for web in (stranger, person.web):
            answer = await web.get("/no-such-page")
            assert answer.status_code == 404
            assert answer.headers["content-type"].startswith("text/html")
            assert "Not found There is no such page." in shown_text(answer.text)


async def test_an_unknown_api_path_is_problem_json_even_for_a_browser(
    base_url: str, person: Person
) -> None:
    async with browser(base_url) as stranger:
        for web in (stranger, person.web):
            answer = await web.get("/api/v1/no-such-thing")
            assert answer.status_code == 404
            assert answer.headers["content-type"].startswith("application/problem+json")
            assert answer.json()["status"] == 404


# 9. Bad input


async def test_a_new_dataset_without_a_name_shows_the_error_by_the_name_field(
    person: Person, client: httpx.AsyncClient
) -> None:
    context = '{"region": "eu"}'
    answer = await person.post(
        "/datasets", name="   ", description="Refund flows", data_context=context,
        form_id=secrets.token_urlsafe(16),
    )  # fmt: skip
    assert answer.status_code == 422
    assert error_by(answer.text, "name")
    assert is_marked_invalid_with_its_error(answer.text, "name")
    assert textarea_text(answer.text, "description") == "Refund flows"
    assert textarea_text(answer.text, "data_context") == context
    assert await dataset_names(client) == []


@pytest.mark.parametrize(
    ("context", "error"),
    [
        (
            '{"region": eu}',
            "Not valid JSON: Expecting value (line 1, column 12)",
        ),
        ('["eu"]', "Must be a JSON object"),
        ('{"a": ' + "[" * 64 + "]" * 64 + "}", "Nested more than 64 levels"),
        ('{"a": ' + "[" * 1_000 + "]" * 1_000 + "}", "Nested more than 64 levels"),
        # Far past Python's own recursion limit, and still under the size a form's field takes.
        ('{"a": ' + '{"b": ' * 30_000 + "1" + "}" * 30_000 + "}", "Nested more than 64 levels"),
        ('{"a": "' + "x" * 256 * 1024 + '"}', "Over the 256 KiB a JSON field of a form takes"),
    ],
)
async def test_a_data_context_that_is_not_a_json_object_is_refused_by_its_field(
    person: Person, client: httpx.AsyncClient, context: str, error: str
) -> None:
    answer = await person.post(
        "/datasets", name="Refunds", data_context=context, form_id=secrets.token_urlsafe(16)
    )
    assert answer.status_code == 422
    assert error in error_by(answer.text, "data_context")
    assert hidden_field(answer.text, "name") == "Refunds"
    assert textarea_text(answer.text, "data_context") == context
    assert await dataset_names(client) == []


async def test_renaming_a_dataset_to_nothing_keeps_its_name(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client, name="Refunds")
    answer = await person.post(
        f"/datasets/{dataset['id']}", name="", description="typed", data_context="{"
    )
    assert answer.status_code == 422
    assert "Not valid JSON" in error_by(answer.text, "data_context")
    assert textarea_text(answer.text, "description") == "typed"
    assert await dataset_names(client) == ["Refunds"]


async def test_a_case_with_a_min_confidence_that_is_not_a_number_shows_the_error_by_it(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    answer = await person.post(
        f"/datasets/{dataset['id']}/cases/new", **case_fields(min_confidence="high")
    )
    assert answer.status_code == 422
    assert error_by(answer.text, "min_confidence") == "Enter a whole number from 0 to 100."
    assert "Nothing was saved" in shown_text(answer.text)
    assert textarea_text(answer.text, "input") == "Where is my refund?"
    assert hidden_field(answer.text, "checks-0-value") == "refund"
    assert hidden_field(answer.text, "min_confidence") == "high"
    assert await case_inputs(client, dataset["id"]) == []


async def test_a_case_with_a_tool_check_naming_no_tool_shows_the_error_by_the_tool(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    fields = case_fields(**{"checks-0-type": "tool_called", "checks-0-tool": "  "})
    answer = await person.post(f"/datasets/{dataset['id']}/cases/new", **fields)
    assert answer.status_code == 422
    assert error_by(answer.text, "checks-0-tool")
    assert textarea_text(answer.text, "input") == "Where is my refund?"
    assert await case_inputs(client, dataset["id"]) == []


async def test_a_case_with_a_bad_regex_is_saved_with_the_regex_error_by_its_field(
    person: Person, client: httpx.AsyncClient
) -> None:
    # The contract: a pattern that does not compile is accepted, with a warning naming it.
    dataset = await create_dataset(client)
    fields = case_fields(**{"checks-0-value": "(refund", "checks-0-regex": "on"})
    answer = await person.post(f"/datasets/{dataset['id']}/cases/new", **fields)
    assert answer.status_code == 303
    saved = await person.web.get(path_of(answer))
    assert "Saved as revision 1" in shown_text(saved.text)
    assert "missing )" in error_by(saved.text, "checks-0-value")
    assert hidden_field(saved.text, "checks-0-value") == "(refund"
    assert await case_inputs(client, dataset["id"]) == ["Where is my refund?"]


async def test_a_bad_regex_is_named_as_it_is_typed(person: Person) -> None:
    answer = await person.post(
        "/ui/check-regex", field="checks-0", **{"checks-0-value": "(a", "checks-0-regex": "on"}
    )
    assert answer.status_code == 200
    # The answer is the text htmx puts in the field's live message, beside the field.
    assert "missing )" in shown_text(answer.text)
    fixed = await person.post(
        "/ui/check-regex", field="checks-0", **{"checks-0-value": "(a)", "checks-0-regex": "on"}
    )
    assert shown_text(fixed.text) == ""


# 10. A form sent twice


async def test_a_new_dataset_form_sent_twice_makes_one_dataset(
    person: Person, client: httpx.AsyncClient
) -> None:
    form = (await person.web.get("/datasets/new")).text
    fields = {
        "csrf_token": hidden_field(form, "csrf_token"),
        "form_id": hidden_field(form, "form_id"),
        "name": "once only",
    }
    first = await person.web.post("/datasets", data=fields)
    second = await person.web.post("/datasets", data=fields)
    assert first.status_code == second.status_code == 303
    assert path_of(first) == path_of(second)
    assert await dataset_names(client) == ["once only"]


async def test_a_double_click_on_create_dataset_makes_one_dataset(
    person: Person, client: httpx.AsyncClient
) -> None:
    fields = {"name": "clicked twice", "form_id": secrets.token_urlsafe(16)}
    answers = await asyncio.gather(*(person.post("/datasets", **fields) for _ in range(2)))
    assert [answer.status_code for answer in answers] == [303, 303]
    assert len({path_of(answer) for answer in answers}) == 1
    assert await dataset_names(client) == ["clicked twice"]


async def test_a_new_case_saved_twice_makes_one_case(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    editor = (await person.web.get(f"/datasets/{dataset['id']}/cases/new")).text
    fields = case_fields(form_id=hidden_field(editor, "form_id"))
    first = await person.post(f"/datasets/{dataset['id']}/cases/new", **fields)
    second = await person.post(f"/datasets/{dataset['id']}/cases/new", **fields)
    assert first.status_code == second.status_code == 303
    assert path_of(first) == path_of(second)
    assert await case_inputs(client, dataset["id"]) == ["Where is my refund?"]


async def test_saving_over_a_revision_saved_meanwhile_is_refused_until_saved_knowingly(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    created = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases",
        json={"input": "Where is my refund?", "checks": [TEXT_CHECK]},
    )
    case_id = created.json()["id"]
    editor = (await person.web.get(f"/cases/{case_id}")).text
    assert hidden_field(editor, "based_on") == "1"
    meanwhile = await client.patch(
        f"/api/v1/test-cases/{case_id}", json={"description": "a colleague's edit"}
    )
    assert meanwhile.status_code == 200
    mine = case_fields(
        input="Where is my refund, please?", form_id=hidden_field(editor, "form_id"), based_on="1"
    )
    refused = await person.post(f"/cases/{case_id}", **mine)
    assert refused.status_code == 409
    assert "Revision 2 of this case was saved after you opened revision 1" in shown_text(
        refused.text
    )
    assert "Where is my refund, please?" in refused.text, "the edits are kept"
    stored = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
    assert (stored["revision"], stored["description"]) == (2, "a colleague's edit")

    knowingly = {**mine, "based_on": hidden_field(refused.text, "based_on")}
    saved = await person.post(f"/cases/{case_id}", **knowingly)
    assert saved.status_code == 303
    stored = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
    assert (stored["revision"], stored["input"]) == (3, "Where is my refund, please?")


async def test_the_start_run_form_sent_twice_starts_one_run(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    await add_case(client, dataset["id"], "hello", checks=[TEXT_CHECK])
    await register_agent(client, f"http://127.0.0.1:{free_port()}/agent")
    dataset_page = (await person.web.get(f"/datasets/{dataset['id']}")).text
    assert f'action="/datasets/{dataset["id"]}/run"' in dataset_page, "no Run button"
    form = (await person.web.get(f"/datasets/{dataset['id']}/run")).text
    form_id = hidden_field(form, "form_id")
    landed = set()
    for _ in range(2):
        answer = await person.post(f"/datasets/{dataset['id']}/run", form_id=form_id)
        assert answer.status_code == 303
        landed.add(path_of(answer))
    runs = (await client.get("/api/v1/eval-runs")).json()["items"]
    assert len(runs) == 1
    assert landed == {f"/runs/{runs[0]['run_id']}"}, "both open the one run's page"


async def test_run_with_no_agent_registered_says_to_register_one(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    await add_case(client, dataset["id"], "hello", checks=[TEXT_CHECK])
    answer = await person.post(f"/datasets/{dataset['id']}/run", form_id=secrets.token_urlsafe(16))
    assert answer.status_code == 409
    assert "register it under Settings, Your agent" in shown_text(answer.text)
    assert (await client.get("/api/v1/eval-runs")).json()["items"] == []


async def test_create_key_sent_twice_makes_one_key(person: Person) -> None:
    form_id = secrets.token_urlsafe(16)
    first = await person.post("/settings/keys", form_id=form_id, scope="ci")
    second = await person.post("/settings/keys", form_id=form_id, scope="ci")
    assert first.status_code == 200
    assert "Your new API key" in shown_text(first.text)
    # A browser shows the second answer: it says the key was made, and how to recover.
    assert second.status_code == 200
    assert "Your new API key" not in shown_text(second.text)
    assert "the first time created a key" in shown_text(second.text)
    listed = (await person.web.get("/settings")).text
    assert len(re.findall(r'aria-label="Revoke ', listed)) == 2, "the first key and one new one"


# 11. Preview failures, in words


@contextlib.asynccontextmanager
async def agent_that(behaviour: str) -> AsyncIterator[str]:
    """The URL of an agent that is down, hangs, redirects, or answers something not JSON."""
    if behaviour == "is down":
        yield f"http://127.0.0.1:{free_port()}/agent"
        return
    handler = {
        "hangs": hang(),
        "redirects": raw_answer(302, b"", {"location": "http://127.0.0.1:9/elsewhere"}),
        "answers garbage": raw_answer(200, b"<html>Oops</html>", {"content-type": "text/html"}),
    }[behaviour]
    agent = await ScriptedAgent((handler,)).start()
    try:
        yield agent.url
    finally:
        await agent.close()


def preview_of(page: str) -> str:
    """The editor's preview panel."""
    found = re.search(r'<section id="preview".*?</section>', page, re.S)
    assert found, "no preview on the page"
    return found.group(0)


def reads_as_words(page: str) -> bool:
    """Whether the page is free of a traceback or an exception's class name."""
    text = shown_text(page)
    leaks = ("Traceback", 'File "', "Exception", "Error:", "httpx.", "httpcore", "asyncio.")
    return not any(leak in text for leak in leaks)


@pytest.mark.parametrize(
    ("behaviour", "words"),
    [
        ("is down", "could not connect to the agent: connection refused"),
        ("hangs", "the agent call timed out after 1 s"),
        ("redirects", "the agent answered HTTP 302 (a redirect, not followed)"),
        ("answers garbage", "the agent's answer is not JSON"),
    ],
)
async def test_a_preview_says_in_words_what_went_wrong_with_the_agent(
    person: Person, client: httpx.AsyncClient, behaviour: str, words: str
) -> None:
    dataset = await create_dataset(client)
    async with agent_that(behaviour) as url:
        await register_agent(client, url, timeout_s=1)
        answer = await person.post(
            f"/datasets/{dataset['id']}/cases/new", **case_fields(action="preview")
        )
    assert answer.status_code == 200
    shown = shown_text(preview_of(answer.text))
    assert "the call failed:" in shown
    assert words in shown
    assert reads_as_words(answer.text), shown
    assert "<html>Oops" not in answer.text, "the agent's answer is shown as text, escaped"
    assert textarea_text(answer.text, "input") == "Where is my refund?"
    assert await case_inputs(client, dataset["id"]) == []


async def test_a_preview_with_no_agent_registered_says_so(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    answer = await person.post(
        f"/datasets/{dataset['id']}/cases/new", **case_fields(action="preview")
    )
    assert answer.status_code == 409
    assert NO_AGENT in shown_text(answer.text)
    assert textarea_text(answer.text, "input") == "Where is my refund?"
    assert await case_inputs(client, dataset["id"]) == []


def htmx_swaps(page: str, status: int) -> bool:
    """Whether htmx, configured as the page configures it, puts an answer of this status in."""
    meta = re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", page)
    assert meta, "no htmx-config on the page"
    for rule in json.loads(html.unescape(meta.group(1)))["responseHandling"]:
        if re.search(rule["code"], str(status)):  # htmx tests each code as a RegExp, in order
            return bool(rule.get("swap"))
    return False


async def test_an_htmx_preview_with_no_agent_registered_shows_the_message(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    editor_url = f"/datasets/{dataset['id']}/cases/new"
    editor = (await person.web.get(editor_url)).text
    for asked in ({}, {"hx-target": "preview-slot"}):  # the form's htmx, or the button's
        answer = await person.web.post(
            editor_url,
            data=case_fields(action="preview"),
            headers={"hx-request": "true", "x-csrf-token": person.csrf, **asked},
        )
        assert NO_AGENT in shown_text(answer.text)
        assert htmx_swaps(editor, answer.status_code), f"htmx drops a {answer.status_code}"
        if asked:  # the refusal is shown in the editor, where the form's errors go
            assert answer.headers["hx-retarget"] == "#editor"
            assert answer.headers["hx-reselect"] == "#editor"


async def test_a_pasted_reply_graded_by_htmx_answers_the_preview_alone(
    person: Person, client: httpx.AsyncClient
) -> None:
    """The Preview and Grade this reply buttons fill the preview slot; the form stays as typed."""
    dataset = await create_dataset(client)
    editor_url = f"/datasets/{dataset['id']}/cases/new"
    editor = (await person.web.get(editor_url)).text
    assert 'hx-target="#preview-slot"' in editor
    answer = await person.web.post(
        editor_url,
        data=case_fields(action="paste", pasted_reply="Your refund is on its way."),
        headers={"hx-request": "true", "hx-target": "preview-slot", "x-csrf-token": person.csrf},
    )
    assert answer.status_code == 200
    assert answer.text.lstrip().startswith('<div id="preview-slot">')
    assert 'name="input"' not in answer.text, "the form is not sent again"
    shown = shown_text(answer.text)
    assert "Your refund is on its way." in shown
    assert "Preview: passed" in shown
    assert "Output must contain" in shown


# 12. Search takes the words literally


async def test_search_takes_percent_underscore_and_markup_literally(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    script = "<script>alert(1)</script> injected"
    for text in ("a 100% refund", "a 1000 refund", "order_id 7", "orderXid 7", script, "alert"):
        await add_case(client, dataset["id"], text)
    page = f"/datasets/{dataset['id']}"

    async def found(query: str, **headers: str) -> list[str]:
        answer = await person.web.get(page, params={"q": query}, headers=headers)
        assert answer.status_code == 200
        rows = re.findall(r'<a href="/cases/[^"]+">(.*?)</a>', answer.text)
        return sorted(html.unescape(row) for row in rows)

    assert await found("%") == ["a 100% refund"]
    assert await found("_") == ["order_id 7"]
    assert await found("<script>") == [script]
    assert await found("<script>", **{"hx-request": "true"}) == [script]
    assert await found("%_%") == []


async def test_search_text_and_case_text_are_shown_escaped(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    await add_case(client, dataset["id"], "<script>alert(1)</script>")
    page = f"/datasets/{dataset['id']}"
    for query in ("<script>alert(1)", '"><img src=x onerror=alert(2)>'):
        answer = await person.web.get(page, params={"q": query})
        assert answer.status_code == 200
        assert "<script>alert(" not in answer.text
        assert "<img src=x" not in answer.text
        assert hidden_field(answer.text, "q") == query
    listed = await person.web.get(page, params={"q": "<script>alert(1)"})
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in listed.text


# Settings and import: what a form shows back


async def test_agent_headers_typed_on_a_form_with_errors_are_never_shown_back(
    person: Person,
) -> None:
    answer = await person.post(
        "/settings/agent",
        name="support bot",
        url="not a url",
        headers="Authorization: Bearer sk-very-secret",
        timeout_s="30",
        form_id=secrets.token_urlsafe(16),
    )
    assert answer.status_code == 422
    assert "sk-very-secret" not in answer.text
    assert "support bot" in answer.text, "the other fields keep what was typed"
    assert "Headers are never shown back: type them again." in shown_text(answer.text)


async def test_a_timeout_of_zero_is_refused_not_replaced(person: Person) -> None:
    answer = await person.post(
        "/settings/agent",
        url="http://127.0.0.1:9/agent",
        timeout_s="0",
        form_id=secrets.token_urlsafe(16),
    )
    assert answer.status_code == 422
    shown = shown_text(answer.text)
    assert "Timeout" in shown and "Saved" not in shown


async def test_the_imported_notice_shows_only_a_count(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    spoofed = await person.web.get(
        f"/datasets/{dataset['id']}", params={"imported": "0. Your key leaked, call us"}
    )
    assert "Your key leaked" not in shown_text(spoofed.text)
    counted = await person.web.get(f"/datasets/{dataset['id']}", params={"imported": "3"})
    assert "Imported 3 test cases" in shown_text(counted.text)


async def test_pasting_more_than_the_body_limit_asks_for_a_file(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    limit = 10 * 1024 * 1024  # the default AGENTLASSO_MAX_BODY_BYTES the test server runs with
    answer = await person.post(f"/datasets/{dataset['id']}/import", pasted="x" * (limit + 1))
    assert answer.status_code == 413
    assert "upload a file for more" in shown_text(answer.text)
    listed = await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")
    assert listed.json()["items"] == []
