"""Tags and dataset versions in the web app, as a browser without JavaScript drives it: the case
editor's Tags, the dataset page's tag filter and versions, and the Start a run form's choice of
version and tags (each state-changing form CSRF-protected and session-bound)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest_asyncio

from tests.integration.test_web_pages import Person, error_by
from tests.support.api import create_case, create_dataset, register_agent
from tests.support.databases import new_project_key
from tests.support.web import (
    browser,
    case_fields,
    hidden_field,
    lands_on,
    shown_text,
    signed_in_csrf,
)


@pytest_asyncio.fixture
async def person(base_url: str, api_key: str) -> AsyncIterator[Person]:
    """A browser signed in as the `api_key` project (the `client` fixture's)."""
    async with browser(base_url) as web:
        yield Person(web, await signed_in_csrf(web, api_key))


async def test_the_case_editor_saves_the_tags_typed_comma_separated(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    answer = await person.post(
        f"/datasets/{dataset['id']}/cases/new", **case_fields(tags=" smoke, billing,,smoke ")
    )
    assert answer.status_code == 303, answer.text
    case_id = lands_on(answer).split("/cases/")[1].split("?")[0]
    case = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
    assert case["tags"] == ["smoke", "billing"]
    editor = await person.web.get(f"/cases/{case_id}")
    assert hidden_field(editor.text, "tags") == "smoke, billing"

    refused = await person.post(
        f"/datasets/{dataset['id']}/cases/new", **case_fields(tags="smoke, two words")
    )
    assert refused.status_code == 422
    assert "no whitespace or comma" in error_by(refused.text, "tags")
    assert hidden_field(refused.text, "tags") == "smoke, two words"


async def test_the_dataset_page_shows_tags_and_filters_by_one(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    await create_case(client, dataset["id"], input="first refund", tags=["smoke", "eu"])
    await create_case(client, dataset["id"], input="second refund", tags=["billing"])
    everything = await person.web.get(f"/datasets/{dataset['id']}")
    shown = shown_text(everything.text)
    assert "Only cases tagged smoke" in shown and "Only cases tagged billing" in shown
    assert f'href="/datasets/{dataset["id"]}?tag=smoke"' in everything.text

    smoke = shown_text((await person.web.get(f"/datasets/{dataset['id']}?tag=smoke")).text)
    assert "first refund" in smoke and "second refund" not in smoke
    none = shown_text((await person.web.get(f"/datasets/{dataset['id']}?tag=Smoke")).text)
    assert "No test case matches." in none


async def test_freezing_a_version_lists_it_with_a_run_of_it(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    await create_case(client, dataset["id"], tags=["smoke"])
    page = (await person.web.get(f"/datasets/{dataset['id']}")).text
    assert "No version yet." in shown_text(page)
    fields = {"version_name": " v1 ", "form_id": hidden_field(page, "form_id")}
    frozen = await person.post(f"/datasets/{dataset['id']}/versions", **fields)
    assert frozen.status_code == 303, frozen.text
    again = await person.post(f"/datasets/{dataset['id']}/versions", **fields)
    assert lands_on(again) == lands_on(frozen), "the same form sent twice freezes once"

    listed = await person.web.get(lands_on(frozen))
    assert "Version frozen" in shown_text(listed.text)
    assert "Run version v1" in shown_text(listed.text)
    versions = (await client.get(f"/api/v1/datasets/{dataset['id']}/versions")).json()["items"]
    assert [(version["name"], version["case_count"]) for version in versions] == [("v1", 1)]
    assert f'name="version" value="{versions[0]["id"]}"' in listed.text

    duplicate = await person.post(
        f"/datasets/{dataset['id']}/versions", version_name="v1", form_id="another-form-id-1234"
    )
    assert duplicate.status_code == 409
    assert "already has a version named 'v1'" in error_by(duplicate.text, "version_name")
    assert hidden_field(duplicate.text, "version_name") == "v1"


async def test_a_freeze_without_the_csrf_token_or_of_another_project_freezes_nothing(
    person: Person, client: httpx.AsyncClient, base_url: str, database_url: str
) -> None:
    dataset = await create_dataset(client)
    forged = await person.web.post(
        f"/datasets/{dataset['id']}/versions", data={"version_name": "forged"}
    )
    assert forged.status_code == 403
    other_key = await new_project_key(database_url)
    async with browser(base_url) as other_web:
        stranger = Person(other_web, await signed_in_csrf(other_web, other_key))
        theirs = await stranger.post(f"/datasets/{dataset['id']}/versions", version_name="x")
        assert theirs.status_code == 404
    versions = (await client.get(f"/api/v1/datasets/{dataset['id']}/versions")).json()
    assert versions["items"] == []


async def start_form(person: Person, dataset_id: str, query: str = "") -> str:
    form = await person.web.get(f"/datasets/{dataset_id}/run{query}")
    assert form.status_code == 200, form.text
    return form.text


def selected(page: str, name: str) -> str:
    select = re.search(rf'<select id="{name}".*?</select>', page, re.S)
    assert select, f"no select {name!r}"
    chosen = re.search(r'<option value="([^"]*)" selected', select.group(0))
    return chosen.group(1) if chosen else ""


async def test_the_start_a_run_form_runs_a_version_with_tags(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    await create_case(client, dataset["id"], input="kept", tags=["smoke"])
    await create_case(client, dataset["id"], input="untagged")
    # No worker runs here: the run is only started, and read back.
    await register_agent(client, "http://127.0.0.1:9/agent")
    version = (
        await client.post(f"/api/v1/datasets/{dataset['id']}/versions", json={"name": "v1"})
    ).json()

    form = await start_form(person, dataset["id"], f"?version={version['id']}")
    assert selected(form, "dataset_version") == version["id"]
    assert "v1 (2 cases, frozen" in shown_text(form)
    fields: dict[str, Any] = {
        "agent": selected(form, "agent"), "dataset_version": version["id"], "tags": "smoke",
        "trials": "1", "threshold": "100", "gate": "threshold",
        "form_id": hidden_field(form, "form_id"),
    }  # fmt: skip
    started = await person.post(f"/datasets/{dataset['id']}/run", **fields)
    assert started.status_code == 303, started.text
    run_id = lands_on(started).rsplit("/", 1)[1]
    run = (await client.get(f"/api/v1/eval-runs/{run_id}")).json()
    assert run["tags"] == ["smoke"] and run["dataset_version"] == "v1"
    assert run["counts"]["total"] == 1
    run_page = shown_text((await person.web.get(f"/runs/{run_id}")).text)
    assert "version v1 of the dataset" in run_page and "only those tagged smoke" in run_page

    fields |= {"tags": "nightly", "form_id": "another-form-id-5678"}
    refused = await person.post(f"/datasets/{dataset['id']}/run", **fields)
    assert refused.status_code == 422
    assert "No case in version 'v1' of the dataset has any of the tags nightly" in error_by(
        refused.text, "tags"
    )
