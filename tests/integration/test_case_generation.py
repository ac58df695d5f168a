"""Generated cases through the API, with the fake Anthropic API answering the model's part.

The server here has no key of its own but points at the fake; a project sets its own key (as
Settings, AI judge does), which is how it gets a model at all: without one, generating is a 409.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import msgspec
import pytest
import pytest_asyncio

from agentlasso.config import Settings
from agentlasso.generation.prompts import GENERATION_PROMPT_VERSION
from agentlasso.server import create_app
from tests.support.a2a_agent import running_a2a_agent
from tests.support.api import create_dataset, register_agent
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key
from tests.support.fake_anthropic import (
    FAKE_API_KEY,
    GENERATED_INPUTS,
    USAGE,
    FakeAnthropic,
    auth_error,
    case_naming_tool,
    generated_case,
    is_case_request,
    is_plan_request,
    malformed_case,
)
from tests.support.servers import serving

TOOLS = [
    {"name": "orders.lookup", "description": "Find an order by its number."},
    {"name": "stripe.refund", "description": "Refund", "input_schema": {"type": "object"}},
]
PROMPT = "You are the support agent of an online shop. Never promise a refund before a lookup."
CASE_REQUEST = "<slot>"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest_asyncio.fixture(scope="module")
async def generating_url(settings: Settings, fake: FakeAnthropic) -> AsyncIterator[str]:
    """The API pointed at the fake Anthropic API, without a key of its own."""
    configured = msgspec.structs.replace(settings, anthropic_base_url=fake.base_url)
    async with serving(create_app(configured)) as url:
        yield url


@pytest_asyncio.fixture
async def api(generating_url: str, database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A fresh project on that server, with its own (fake) Anthropic key."""
    key = await new_project_key(database_url)
    async with httpx.AsyncClient(
        base_url=generating_url, headers={"x-api-key": key}, timeout=60
    ) as http:
        response = await http.patch(
            "/api/v1/judge-settings", json={"anthropic_api_key": FAKE_API_KEY}
        )
        assert response.status_code == 200, response.text
        yield http


async def generate(http: httpx.AsyncClient, dataset_id: str, **body: Any) -> dict[str, Any]:
    response = await http.post(f"/api/v1/datasets/{dataset_id}/generate", json=body)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def drafts_of(http: httpx.AsyncClient, dataset_id: str, **params: str) -> list[Any]:
    response = await http.get(f"/api/v1/datasets/{dataset_id}/drafts", params=params)
    assert response.status_code == 200, response.text
    items: list[Any] = response.json()["items"]
    return items


async def cases_of(http: httpx.AsyncClient, dataset_id: str) -> list[Any]:
    response = await http.get(f"/api/v1/datasets/{dataset_id}/test-cases")
    items: list[Any] = response.json()["items"]
    return items


def named_tools(draft: dict[str, Any]) -> set[str]:
    named = {*draft["tools_expected"], *draft["tools_forbidden"]}
    for check in draft["checks"]:
        named.update([check["tool"]] if "tool" in check else check.get("tools", []))
    return named


async def test_generated_drafts_are_reviewed_before_they_join_the_dataset(
    api: httpx.AsyncClient, fake: FakeAnthropic
) -> None:
    dataset = await create_dataset(api)
    before = len(fake.requests)
    body = {"system_prompt": PROMPT, "tools": TOOLS, "instruction": "Focus on refunds", "count": 6}
    answer = await generate(api, dataset["id"], **body)

    drafts = answer["drafts"]
    assert len(drafts) == 6
    assert {draft["status"] for draft in drafts} == {"pending"}
    for draft in drafts:
        assert draft["input"] and draft["description"] and draft["category"]
        assert draft["checks"] and draft["expected_output"]
        assert named_tools(draft) <= {"orders.lookup", "stripe.refund"}
    categories = [draft["category"] for draft in drafts]
    assert categories.count("happy_path") <= 2, "the happy path is at most about a third"
    assert len(set(categories)) >= 4
    # One plan, then a case a slot; the instruction and the tools reached the model, fenced.
    asked = fake.requests[before:]
    assert sum(map(is_plan_request, asked)) == 1
    assert sum(map(is_case_request, asked)) == 6
    assert "<instruction>\nFocus on refunds\n</instruction>" in asked[0].prompt_text
    assert "stripe.refund" in asked[0].prompt_text
    usage = answer["usage"]
    assert usage["calls"] == 7
    assert usage["input_tokens"] == 7 * USAGE["input_tokens"]
    assert usage["output_tokens"] == 7 * USAGE["output_tokens"]
    assert usage["cost_usd"] == pytest.approx(7 * (420 * 2 + 60 * 10) / 1_000_000)
    assert usage["model"] == "claude-sonnet-5-5"
    assert usage["prompt_version"] == GENERATION_PROMPT_VERSION
    assert answer["discarded"] == [] and answer["timed_out"] is False

    # Nothing joined the dataset yet.
    assert await cases_of(api, dataset["id"]) == []
    assert [d["id"] for d in await drafts_of(api, dataset["id"])] == [d["id"] for d in drafts]

    first, second, third = drafts[:3]
    accepted = await api.post(f"/api/v1/datasets/{dataset['id']}/drafts/{first['id']}/accept")
    assert accepted.status_code == 201, accepted.text
    case = accepted.json()
    assert case["input"] == first["input"] and case["revision"] == 1
    assert [check["type"] for check in case["checks"]] == [c["type"] for c in first["checks"]]
    assert case["checks"][0]["id"] == "c1"
    assert case["expected_output"] == first["expected_output"]
    assert case["description"] == first["description"]

    edited = await api.post(
        f"/api/v1/datasets/{dataset['id']}/drafts/{second['id']}/accept",
        json={"expected_output": "Asks for the order number.", "evaluation_type": "SCORE"},
    )
    assert edited.status_code == 201, edited.text
    assert edited.json()["expected_output"] == "Asks for the order number."

    rejected = await api.post(f"/api/v1/datasets/{dataset['id']}/drafts/{third['id']}/reject")
    assert rejected.status_code == 204, rejected.text

    inputs = {c["input"] for c in await cases_of(api, dataset["id"])}
    assert inputs == {first["input"], second["input"]}
    accepted_now = await drafts_of(api, dataset["id"], status="accepted")
    assert {d["id"] for d in accepted_now} == {first["id"], second["id"]}
    assert {d["test_case_id"] for d in accepted_now} == {case["id"], edited.json()["id"]}
    assert [d["id"] for d in await drafts_of(api, dataset["id"], status="rejected")] == [
        third["id"]
    ]
    assert len(await drafts_of(api, dataset["id"], status="pending")) == 3

    # Decided drafts stay decided.
    again = await api.post(f"/api/v1/datasets/{dataset['id']}/drafts/{first['id']}/accept")
    assert_problem(again, 409)
    assert_problem(
        await api.post(f"/api/v1/datasets/{dataset['id']}/drafts/{first['id']}/reject"), 409
    )
    assert len(await cases_of(api, dataset["id"])) == 2


async def test_regenerating_replaces_a_draft_with_a_new_one_for_its_slot(
    api: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(api)
    old = (await generate(api, dataset["id"], system_prompt=PROMPT, tools=TOOLS, count=2))[
        "drafts"
    ][1]
    response = await api.post(f"/api/v1/datasets/{dataset['id']}/drafts/{old['id']}/regenerate")
    assert response.status_code == 201, response.text
    new = response.json()
    assert new["status"] == "pending" and new["id"] != old["id"]
    assert (new["category"], new["intent"], new["tool"]) == (
        old["category"], old["intent"], old["tool"],
    )  # fmt: skip
    assert new["input"] != old["input"]
    assert new["generation_id"] != old["generation_id"]
    rejected = await drafts_of(api, dataset["id"], status="rejected")
    assert [(d["id"], d["replaced_by"]) for d in rejected] == [(old["id"], new["id"])]
    assert_problem(
        await api.post(f"/api/v1/datasets/{dataset['id']}/drafts/{old['id']}/regenerate"), 409
    )


async def test_a_regeneration_that_writes_nothing_usable_is_a_409_and_keeps_the_draft(
    api: httpx.AsyncClient, fake: FakeAnthropic
) -> None:
    # Before: a 500 (no replacement to answer with), found by Schemathesis.
    dataset = await create_dataset(api)
    old = (await generate(api, dataset["id"], system_prompt=PROMPT, tools=TOOLS, count=1))[
        "drafts"
    ][0]
    fake.when(CASE_REQUEST, malformed_case(), malformed_case(), malformed_case())
    url = f"/api/v1/datasets/{dataset['id']}/drafts/{old['id']}/regenerate"
    body = assert_problem(await api.post(url), 409)
    assert "did not match the schema" in body["detail"]
    assert [d["id"] for d in await drafts_of(api, dataset["id"], status="pending")] == [old["id"]]


async def test_the_registered_agents_prompt_and_tools_are_used_unless_given(
    api: httpx.AsyncClient, fake: FakeAnthropic
) -> None:
    dataset = await create_dataset(api)
    tools = [{"name": "calendar.book"}, {"name": "calendar.cancel"}]
    await register_agent(api, "http://127.0.0.1:9/agent", system_prompt="You book rooms.",
                         tools=tools)  # fmt: skip
    before = len(fake.requests)
    drafts = (await generate(api, dataset["id"], count=3))["drafts"]
    assert len(drafts) == 3
    plan = fake.requests[before]
    assert "You book rooms." in plan.prompt_text and "calendar.cancel" in plan.prompt_text
    for draft in drafts:
        assert named_tools(draft) <= {"calendar.book", "calendar.cancel"}


async def test_a_candidate_naming_a_tool_the_agent_lacks_never_becomes_a_draft(
    api: httpx.AsyncClient, fake: FakeAnthropic
) -> None:
    dataset = await create_dataset(api)
    # A tool typed in that no registered agent has is fine: it is the agent's as given.
    tools = [{"name": "warehouse.scan"}]
    fake.when(CASE_REQUEST, case_naming_tool("refunds.delete"))
    answer = await generate(api, dataset["id"], system_prompt=PROMPT, tools=tools, count=3)
    assert len(answer["drafts"]) == 3, "the empty slot was generated again"
    for draft in answer["drafts"]:
        assert "refunds.delete" not in str(draft)
    assert answer["discarded"] == [
        {
            "category": answer["discarded"][0]["category"],
            "reason": "it names a tool the agent does not have: refunds.delete",
        }
    ]
    assert answer["usage"]["calls"] == 1 + 4


async def test_a_slot_is_regenerated_at_most_twice(
    api: httpx.AsyncClient, fake: FakeAnthropic
) -> None:
    dataset = await create_dataset(api)
    before = len(fake.requests)
    fake.when(CASE_REQUEST, malformed_case(), case_naming_tool("nope"), malformed_case())
    answer = await generate(api, dataset["id"], system_prompt=PROMPT, tools=TOOLS, count=1)
    assert answer["drafts"] == []
    assert len(answer["discarded"]) == 3
    assert "did not match the schema" in answer["discarded"][0]["reason"]
    assert sum(map(is_case_request, fake.requests[before:])) == 3
    assert await drafts_of(api, dataset["id"]) == []
    assert answer["usage"]["calls"] == 4, "usage is recorded even when nothing came of it"


async def test_near_duplicates_of_the_dataset_or_each_other_are_dropped(
    api: httpx.AsyncClient, fake: FakeAnthropic
) -> None:
    dataset = await create_dataset(api)
    existing = "Where is my refund for order 7777?"
    created = await api.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": existing}
    )
    assert created.status_code == 201, created.text
    fake.when(CASE_REQUEST, generated_case(input="where is my REFUND for order 7777"))
    answer = await generate(api, dataset["id"], system_prompt=PROMPT, tools=TOOLS, count=2)
    assert len(answer["drafts"]) == 2
    assert existing.lower().rstrip("?") not in [d["input"].lower() for d in answer["drafts"]]
    assert answer["discarded"][0]["reason"].startswith("it nearly repeats an existing case")
    inputs = [d["input"] for d in answer["drafts"]]
    assert all(text in GENERATED_INPUTS for text in inputs)


async def test_without_a_model_key_generating_is_a_409(
    generating_url: str, database_url: str
) -> None:
    key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=generating_url, headers={"x-api-key": key}) as http:
        dataset = await create_dataset(http)
        response = await http.post(
            f"/api/v1/datasets/{dataset['id']}/generate", json={"system_prompt": PROMPT}
        )
        body = assert_problem(response, 409)
        assert "API key" in body["detail"]


async def test_a_refused_key_is_a_409_saying_so(
    api: httpx.AsyncClient, fake: FakeAnthropic
) -> None:
    dataset = await create_dataset(api)
    fake.script(auth_error())
    response = await api.post(
        f"/api/v1/datasets/{dataset['id']}/generate", json={"system_prompt": PROMPT}
    )
    body = assert_problem(response, 409)
    assert "API key was refused" in body["detail"]


async def test_bad_requests_name_the_field(api: httpx.AsyncClient) -> None:
    dataset = await create_dataset(api)
    url = f"/api/v1/datasets/{dataset['id']}/generate"
    for count in (0, 21, "5"):
        response = await api.post(url, json={"system_prompt": PROMPT, "count": count})
        assert_problem(response, 422, pointer="/count")
    assert_problem(await api.post(url, json={"tools": [{"description": "no name"}]}), 422,
                   pointer="/tools/0/name")  # fmt: skip
    assert_problem(await api.post(url, json={}), 422, pointer="/system_prompt")
    assert_problem(await api.post(url, json={"agent_id": "nope"}), 404, pointer="/agent_id")
    missing = "00000000-0000-4000-8000-000000000000"
    assert_problem(await api.post(url, json={"agent_id": missing}), 404, pointer="/agent_id")
    assert_problem(await api.post(f"/api/v1/datasets/{missing}/generate", json={}), 404)
    assert_problem(await api.get(f"/api/v1/datasets/{dataset['id']}/drafts?status=maybe"), 422,
                   parameter="status")  # fmt: skip
    draft_url = f"/api/v1/datasets/{dataset['id']}/drafts/{missing}"
    for action in ("accept", "reject", "regenerate"):
        assert_problem(await api.post(f"{draft_url}/{action}"), 404)


async def test_an_invalid_edit_on_accepting_is_a_422_and_the_draft_stays_pending(
    api: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(api)
    draft = (await generate(api, dataset["id"], system_prompt=PROMPT, tools=TOOLS, count=1))[
        "drafts"
    ][0]
    url = f"/api/v1/datasets/{dataset['id']}/drafts/{draft['id']}/accept"
    bad = {"checks": [{"type": "tool_called"}]}
    assert_problem(await api.post(url, json=bad), 422, pointer="/checks/0/tool")
    twice = {"checks": [{"id": "a", "type": "output_valid_json"},
                        {"id": "a", "type": "output_valid_json"}]}  # fmt: skip
    assert_problem(await api.post(url, json=twice), 422, pointer="/checks/1/id")
    assert (await drafts_of(api, dataset["id"]))[0]["status"] == "pending"
    assert await cases_of(api, dataset["id"]) == []


async def test_a_project_past_its_generations_a_minute_gets_429_and_another_does_not(
    settings: Settings, fake: FakeAnthropic, database_url: str
) -> None:
    configured = msgspec.structs.replace(
        settings, anthropic_base_url=fake.base_url, quota_generations_per_min=2
    )
    body = {"system_prompt": PROMPT, "tools": TOOLS, "count": 1}
    async with serving(create_app(configured)) as url:
        answers: dict[str, list[httpx.Response]] = {}
        for project in ("keyless", "busy", "other"):
            key = await new_project_key(database_url)
            async with httpx.AsyncClient(
                base_url=url, headers={"x-api-key": key}, timeout=60
            ) as http:
                if project != "keyless":
                    await http.patch(
                        "/api/v1/judge-settings", json={"anthropic_api_key": FAKE_API_KEY}
                    )
                dataset = await create_dataset(http)
                times = 1 if project == "other" else 3
                generated = f"/api/v1/datasets/{dataset['id']}/generate"
                answers[project] = [await http.post(generated, json=body) for _ in range(times)]
                if project == "busy":
                    draft = answers[project][0].json()["drafts"][0]
                    again = f"/api/v1/datasets/{dataset['id']}/drafts/{draft['id']}/regenerate"
                    answers[project].append(await http.post(again))
    busy = [answer.status_code for answer in answers["busy"]]
    assert busy == [201, 201, 429, 429], "a regenerated draft counts as a generation"
    problem = assert_problem(answers["busy"][2], 429)
    retry_after_s = int(answers["busy"][2].headers["retry-after"])
    assert 1 <= retry_after_s <= 30, "a generation's turn comes back within half a minute at 2"
    assert problem["detail"] == (
        f"Your project may start 2 case generations a minute; try again in {retry_after_s} s."
    )
    assert [answer.status_code for answer in answers["other"]] == [201]
    # Without a model key nothing runs, and nothing is counted: it keeps saying why.
    assert [answer.status_code for answer in answers["keyless"]] == [409, 409, 409]


async def test_an_a2a_agents_card_is_read_for_its_prompt_and_skills_when_that_is_all_there_is(
    api: httpx.AsyncClient, fake: FakeAnthropic
) -> None:
    dataset = await create_dataset(api)
    with running_a2a_agent() as agent:
        registered = await api.post(
            "/api/v1/agents", json={"name": "a2a", "url": agent.base_url, "protocol": "a2a"}
        )
    assert registered.status_code == 201, registered.text
    before = len(fake.requests)

    await generate(api, dataset["id"], count=2, agent_id=registered.json()["id"])

    plan = fake.requests[before]
    assert "You are Refund agent. Answers refund questions" in plan.prompt_text
    assert "Looks an order up and refunds it" in plan.prompt_text
    assert '"refunds"' in plan.prompt_text, "the card's skill is offered as a tool"
