"""Generated cases in the web app, as a browser without JavaScript uses it: the Generate cases
form, the review queue grouped by kind with its coverage, and each draft's actions."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import httpx
import msgspec
import pytest
import pytest_asyncio

from agentlasso.config import Settings
from agentlasso.server import create_app
from tests.support.api import create_dataset
from tests.support.databases import new_project_key
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from tests.support.servers import serving
from tests.support.web import browser, path_of, shown_text, signed_in_csrf

TOOLS = '[{"name": "orders.lookup", "description": "Find an order."}]'
PROMPT = "You are the support agent of a shop."


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest_asyncio.fixture(scope="module")
async def app_url(settings: Settings, fake: FakeAnthropic) -> AsyncIterator[str]:
    """The app, its model the fake Anthropic API (the server's own key)."""
    configured = msgspec.structs.replace(
        settings, anthropic_api_key=FAKE_API_KEY, anthropic_base_url=fake.base_url
    )
    async with serving(create_app(configured)) as url:
        yield url


@pytest_asyncio.fixture
async def key(database_url: str) -> str:
    return await new_project_key(database_url)


@pytest_asyncio.fixture
async def api(app_url: str, key: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=app_url, headers={"x-api-key": key}) as http:
        yield http


@pytest_asyncio.fixture
async def person(app_url: str, key: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A signed-in browser and its CSRF token."""
    async with browser(app_url) as web:
        token = await signed_in_csrf(web, key)
        yield web, token


def draft_ids(page: str) -> list[str]:
    return re.findall(r'/drafts/([0-9a-f-]{36})/accept"', page)


async def generated(
    person: tuple[httpx.AsyncClient, str], api: httpx.AsyncClient, count: int
) -> tuple[str, list[str]]:
    """A dataset with `count` drafts made through the form; its id and the drafts' ids."""
    web, token = person
    dataset = await create_dataset(api)
    answer = await web.post(
        f"/datasets/{dataset['id']}/generate",
        data={"csrf_token": token, "agent": "", "system_prompt": PROMPT, "tools": TOOLS,
              "instruction": "Refunds", "count": str(count)},
    )  # fmt: skip
    assert answer.status_code == 303, answer.text
    assert path_of(answer) == f"/datasets/{dataset['id']}/drafts?generated={count}&discarded=0"
    review = await web.get(path_of(answer))
    return dataset["id"], draft_ids(review.text)


async def test_the_form_generates_drafts_for_review(
    person: tuple[httpx.AsyncClient, str], api: httpx.AsyncClient
) -> None:
    web, _ = person
    dataset = await create_dataset(api)
    shown = shown_text((await web.get(f"/datasets/{dataset['id']}")).text)
    assert "Generate cases" in shown
    form = await web.get(f"/datasets/{dataset['id']}/generate")
    assert form.status_code == 200
    for label in ("Agent", "System prompt", "Tools", "Instruction", "Count"):
        assert f">{label}</label>" in form.text

    dataset_id, ids = await generated(person, api, 4)
    assert len(ids) == 4
    review = shown_text((await web.get(f"/datasets/{dataset_id}/drafts")).text)
    assert "Generated 4 drafts" not in review  # the notice is only on the redirect's page
    assert "Coverage" in review and "Happy path" in review and "Must refuse" in review
    assert "Why it exists" in review and "Expected output" in review
    assert "4 drafts awaiting review" in review
    cases = (await api.get(f"/api/v1/datasets/{dataset_id}/test-cases")).json()["items"]
    assert cases == [], "nothing joins the dataset before it is accepted"


async def test_accept_reject_and_regenerate(
    person: tuple[httpx.AsyncClient, str], api: httpx.AsyncClient
) -> None:
    web, token = person
    dataset_id, ids = await generated(person, api, 3)
    base = f"/datasets/{dataset_id}/drafts"
    accepted = await web.post(f"{base}/{ids[0]}/accept", data={"csrf_token": token})
    assert accepted.status_code == 303 and path_of(accepted) == f"{base}?accepted=1"
    rejected = await web.post(f"{base}/{ids[1]}/reject", data={"csrf_token": token})
    assert path_of(rejected) == f"{base}?rejected=1"
    regenerated = await web.post(f"{base}/{ids[2]}/regenerate", data={"csrf_token": token})
    assert path_of(regenerated) == f"{base}?regenerated=1"

    remaining = draft_ids((await web.get(base)).text)
    assert len(remaining) == 1 and remaining[0] not in ids
    cases = (await api.get(f"/api/v1/datasets/{dataset_id}/test-cases")).json()["items"]
    assert len(cases) == 1
    drafts = (await api.get(f"/api/v1/datasets/{dataset_id}/drafts")).json()["items"]
    assert {d["id"]: d["status"] for d in drafts}[ids[0]] == "accepted"
    # A decided draft says so rather than acting twice.
    again = await web.post(f"{base}/{ids[0]}/reject", data={"csrf_token": token})
    assert again.status_code == 409
    assert "This draft was already accepted." in shown_text(again.text)


async def test_edit_opens_the_rubric_editor_and_saving_accepts(
    person: tuple[httpx.AsyncClient, str], api: httpx.AsyncClient
) -> None:
    web, token = person
    dataset_id, ids = await generated(person, api, 1)
    url = f"/datasets/{dataset_id}/drafts/{ids[0]}/edit"
    editor = await web.get(url)
    assert editor.status_code == 200, editor.text
    draft = (await api.get(f"/api/v1/datasets/{dataset_id}/drafts")).json()["items"][0]
    assert draft["input"] in shown_text(editor.text)
    assert f'action="{url}"' in editor.text
    saved = await web.post(
        url,
        data={"csrf_token": token, "form_id": "f-edit-1", "action": "save",
              "input": "Edited input from review", "expected_output": "Asks for the number.",
              "evaluation_type": "BOOLEAN", "min_confidence": "70"},
    )  # fmt: skip
    assert saved.status_code == 303, saved.text
    assert re.fullmatch(r"/cases/[0-9a-f-]{36}\?saved=1", path_of(saved))
    cases = (await api.get(f"/api/v1/datasets/{dataset_id}/test-cases")).json()["items"]
    assert [c["input"] for c in cases] == ["Edited input from review"]
    assert (await web.get(url)).status_code == 409, "an accepted draft is not edited again"


async def test_bad_form_input_is_shown_by_its_field(
    person: tuple[httpx.AsyncClient, str], api: httpx.AsyncClient
) -> None:
    web, token = person
    dataset = await create_dataset(api)
    url = f"/datasets/{dataset['id']}/generate"
    for fields, shown in (
        ({"tools": "[not json"}, "Not valid JSON"),
        ({"count": "25"}, "At most 20"),
        ({"count": "many"}, "A whole number from 1 to 20."),
        ({"system_prompt": "", "tools": ""}, "Nothing to generate cases from"),
    ):
        body = {"csrf_token": token, "agent": "", "system_prompt": PROMPT, **fields}
        answer = await web.post(url, data=body)
        assert answer.status_code == 422, (fields, answer.status_code)
        assert shown in shown_text(answer.text), fields
    forged = await web.post(url, data={"csrf_token": "forged", "system_prompt": PROMPT})
    assert forged.status_code == 403


async def test_preview_without_an_agent_says_so(
    person: tuple[httpx.AsyncClient, str], api: httpx.AsyncClient
) -> None:
    web, token = person
    dataset_id, ids = await generated(person, api, 1)
    answer = await web.post(
        f"/datasets/{dataset_id}/drafts/{ids[0]}/preview", data={"csrf_token": token}
    )
    assert answer.status_code == 200
    assert "No agent is registered" in shown_text(answer.text)


async def test_another_projects_drafts_are_not_found(
    person: tuple[httpx.AsyncClient, str], api: httpx.AsyncClient, app_url: str,
    database_url: str,
) -> None:  # fmt: skip
    dataset_id, ids = await generated(person, api, 1)
    async with browser(app_url) as other:
        token = await signed_in_csrf(other, await new_project_key(database_url))
        assert (await other.get(f"/datasets/{dataset_id}/drafts")).status_code == 404
        assert (await other.get(f"/datasets/{dataset_id}/generate")).status_code == 404
        url = f"/datasets/{dataset_id}/drafts/{ids[0]}"
        assert (await other.get(f"{url}/edit")).status_code == 404
        answer = await other.post(f"{url}/accept", data={"csrf_token": token})
        assert answer.status_code == 404


async def test_the_form_says_when_the_projects_generations_a_minute_are_spent(
    settings: Settings, fake: FakeAnthropic, key: str
) -> None:
    configured = msgspec.structs.replace(
        settings, anthropic_api_key=FAKE_API_KEY, anthropic_base_url=fake.base_url,
        quota_generations_per_min=1,
    )  # fmt: skip
    async with (
        serving(create_app(configured)) as url,
        httpx.AsyncClient(base_url=url, headers={"x-api-key": key}) as api,
        browser(url) as web,
    ):
        token = await signed_in_csrf(web, key)
        dataset = await create_dataset(api)
        fields = {"csrf_token": token, "agent": "", "system_prompt": PROMPT, "tools": TOOLS,
                  "instruction": "", "count": "1"}  # fmt: skip
        first = await web.post(f"/datasets/{dataset['id']}/generate", data=fields)
        second = await web.post(f"/datasets/{dataset['id']}/generate", data=fields)
    assert first.status_code == 303
    assert second.status_code == 429
    shown = shown_text(second.text)
    said = re.search(r"may start 1 case generation a minute; try again in (\d+) s\.", shown)
    assert said is not None, shown
    assert 1 <= int(said[1]) <= 60
    assert PROMPT in shown, "the form keeps what was typed"
