"""Conversations in the web app, against a real `agentlasso api` process: written in the rubric
editor (turns, their checks, a simulated user), tried with a pasted transcript, and read on a
run's case card as a chat with the verdicts of each turn beside it."""

from __future__ import annotations

import html
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.support.api import create_dataset, start_run
from tests.support.conversation_results import played, record_conversation
from tests.support.web import browser, path_of, shown_text, signed_in_csrf

LOOKUP = [{"name": "orders.lookup", "arguments": {"order": 1234}}]
REFUNDED = [{"name": "stripe.refund", "arguments": {"order": 1234}}]
REFUND = [
    ("I want a refund for order 1234.", "Let me look it up.", LOOKUP),
    ("It arrived broken.", "Sorry! I have refunded it.", REFUNDED),
    ("Thanks, when will I see the money?", "Within 3-5 business days.", []),
]


def turn(user: str, check: dict[str, Any]) -> dict[str, Any]:
    return {"user": user, "checks": [check]}


CONVERSATION_CASE: dict[str, Any] = {
    "description": "A refund over three turns",
    "conversation": {
        "turns": [
            turn(REFUND[0][0], {"type": "tool_called", "tool": "orders.lookup", "id": "looked-up"}),
            turn(REFUND[1][0], {"type": "tool_called", "tool": "stripe.refund", "id": "refunded"}),
            turn(
                REFUND[2][0], {"type": "output_contains", "value": "business days", "id": "delay"}
            ),
        ],
    },
    "checks": [{"type": "tool_not_called", "tool": "orders.cancel", "id": "never-cancelled"}],
}


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    return api_process_url


class Person:
    """A signed-in browser (no JavaScript) and its session's CSRF token."""

    def __init__(self, web: httpx.AsyncClient, csrf: str) -> None:
        self.web, self.csrf = web, csrf

    async def post(self, action: str, fields: dict[str, str]) -> httpx.Response:
        return await self.web.post(action, data={"csrf_token": self.csrf, **fields})


@pytest_asyncio.fixture
async def person(base_url: str, api_key: str) -> AsyncIterator[Person]:
    async with browser(base_url) as web:
        yield Person(web, await signed_in_csrf(web, api_key))


def three_turns(**extra: str) -> dict[str, str]:
    """The editor's fields for a three-turn conversation with a check on each turn."""
    return {
        "kind": "conversation", "description": "Refund, three turns",
        "evaluation_type": "SCORE", "min_confidence": "70",
        "turns-0-user": REFUND[0][0], "turns-0-checks-0-type": "tool_called",
        "turns-0-checks-0-tool": "orders.lookup",
        "turns-1-user": REFUND[1][0], "turns-1-checks-0-type": "tool_called",
        "turns-1-checks-0-tool": "stripe.refund",
        "turns-2-user": REFUND[2][0], "turns-2-checks-0-type": "output_contains",
        "turns-2-checks-0-value": "business days",
        "checks-0-type": "tool_not_called", "checks-0-tool": "orders.cancel",
        **extra,
    }  # fmt: skip


def error_by(page: str, field: str) -> str:
    paragraph = rf'<p class="field-error" id="{re.escape(field)}-(?:error|check)"[^>]*>(.*?)</p>'
    found = re.search(paragraph, page, re.S)
    assert found, f"no error paragraph by the field {field!r}"
    return shown_text(found.group(1))


def textarea_text(page: str, field: str) -> str:
    found = re.search(rf'<textarea[^>]*name="{re.escape(field)}"[^>]*>(.*?)</textarea>', page, re.S)
    assert found, f"no text area {field!r} on the page"
    text = html.unescape(found.group(1))
    return text[1:] if text.startswith("\n") else text


async def test_a_conversation_written_in_the_editor_is_saved_with_its_turns_and_simulated_user(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    fields = three_turns(persona="A hurried customer", goal="Get the refund date", max_turns="3")
    saved = await person.post(f"/datasets/{dataset['id']}/cases/new", {**fields, "action": "save"})
    assert saved.status_code == 303, saved.text
    case_id = path_of(saved).split("/")[2].split("?")[0]
    stored = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
    assert stored["input"] is None
    conversation = stored["conversation"]
    assert [turn["user"] for turn in conversation["turns"]] == [turn[0] for turn in REFUND]
    assert [turn["checks"][0]["type"] for turn in conversation["turns"]] == [
        "tool_called", "tool_called", "output_contains",
    ]  # fmt: skip
    assert conversation["simulated_user"] == {
        "persona": "A hurried customer", "goal": "Get the refund date", "max_turns": 3,
        "opening": None,
    }  # fmt: skip
    assert stored["checks"][0]["tool"] == "orders.cancel"
    page = await person.web.get(path_of(saved))
    shown = shown_text(page.text)
    assert "Saved as revision 1" in shown
    assert "Turn 3" in shown and "Simulated user" in shown
    assert textarea_text(page.text, "turns-1-user") == REFUND[1][0]
    assert textarea_text(page.text, "persona") == "A hurried customer"
    listed = shown_text((await person.web.get(f"/datasets/{dataset['id']}")).text)
    assert f"Conversation, 3 turns: {REFUND[0][0]}" in listed


async def test_a_single_turn_case_becomes_a_conversation_and_gains_turns_and_turn_checks(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    new = f"/datasets/{dataset['id']}/cases/new"
    single = {"input": "Where is my refund?", "evaluation_type": "SCORE", "min_confidence": "70"}
    made = await person.post(new, {**single, "action": "to_conversation"})
    assert made.status_code == 200
    assert textarea_text(made.text, "turns-0-user") == "Where is my refund?"
    assert 'name="input"' not in made.text
    posted = {"kind": "conversation", "turns-0-user": "Where is my refund?",
              "evaluation_type": "SCORE", "min_confidence": "70"}  # fmt: skip
    added = await person.post(new, {**posted, "action": "add_turn"})
    assert textarea_text(added.text, "turns-1-user") == ""
    checked = await person.post(new, {**posted, "action": "turn_add:0:tool_called"})
    assert 'name="turns-0-checks-0-tool"' in checked.text
    assert "Turn 1 check 1: Tool must be called" in shown_text(checked.text)


async def test_a_conversation_that_is_not_valid_shows_each_error_beside_its_field(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    fields = three_turns(**{"turns-1-checks-0-tool": "  ", "persona": "A customer"})
    refused = await person.post(
        f"/datasets/{dataset['id']}/cases/new", {**fields, "action": "save"}
    )
    assert refused.status_code == 422
    assert "Nothing was saved" in shown_text(refused.text)
    assert error_by(refused.text, "turns-1-checks-0-tool")
    assert textarea_text(refused.text, "turns-2-user") == REFUND[2][0]
    nothing = await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")
    assert nothing.json()["items"] == []
    no_goal = three_turns(persona="A customer")
    refused = await person.post(
        f"/datasets/{dataset['id']}/cases/new", {**no_goal, "action": "save"}
    )
    assert refused.status_code == 422
    assert error_by(refused.text, "goal")


LINES_TRANSCRIPT = """User: I want a refund for order 1234.
Agent: Let me look it up.
Tool calls: [{"name": "orders.lookup", "arguments": {"order": 1234}}]
User: It arrived broken.
Agent: Sorry to hear that.
It is being looked at.
User: Thanks, when will I see the money?
Agent: Within 3-5 business days.
"""


async def test_a_pasted_transcript_is_graded_turn_by_turn(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    new = f"/datasets/{dataset['id']}/cases/new"
    fields = three_turns(pasted_transcript=LINES_TRANSCRIPT, action="paste")
    graded = await person.post(new, fields)
    assert graded.status_code == 200, graded.text
    shown = shown_text(graded.text)
    assert "Preview: failed" in shown
    shown = shown[shown.index("Preview: failed") :]  # the editor's own turns come before
    turn_two = shown[shown.index("Turn 2") : shown.index("Turn 3")]
    assert "Sorry to hear that. It is being looked at." in turn_two
    assert "Tool must be called" in turn_two and "failed" in turn_two
    turn_one = shown[shown.index("Turn 1") : shown.index("Turn 2")]
    assert "orders.lookup" in turn_one and "passed" in turn_one
    assert "How it ended: The last scripted turn was answered." in shown
    own = shown[shown.index("The conversation's checks") :]
    assert "Tool must NOT be called" in own and "passed" in own
    assert await _cases(client, dataset["id"]) == [], "a preview stores nothing"


async def test_a_transcript_as_json_with_a_simulated_users_turn_marks_it_simulated(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    messages = json.dumps([
        {"role": "user", "content": REFUND[0][0]},
        {"role": "assistant", "content": "Looking.", "tool_calls": LOOKUP},
        {"role": "user", "content": REFUND[1][0]},
        {"role": "assistant", "content": "Refunded.", "tool_calls": REFUNDED},
        {"role": "user", "content": REFUND[2][0]},
        {"role": "assistant", "content": "In 3 business days."},
        {"role": "user", "content": "Great, bye."},
        {"role": "assistant", "content": "Bye!"},
    ])  # fmt: skip
    fields = three_turns(
        persona="A customer", goal="A date", pasted_transcript=messages,
        pasted_ended_by="simulated_user", action="paste",
    )  # fmt: skip
    graded = await person.post(f"/datasets/{dataset['id']}/cases/new", fields)
    assert graded.status_code == 200, graded.text
    shown = shown_text(graded.text)
    assert "Preview: passed" in shown
    shown = shown[shown.index("Preview: passed") :]
    turn_four = shown[shown.index("Turn 4") :]
    assert turn_four.startswith("Turn 4 Simulated user")
    assert "How it ended: The simulated user ended the conversation." in shown


async def test_a_transcript_that_cannot_be_read_says_why_beside_it(
    person: Person, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client)
    fields = three_turns(pasted_transcript="Agent: hello first", action="paste")
    refused = await person.post(f"/datasets/{dataset['id']}/cases/new", fields)
    assert refused.status_code == 422
    assert "no user message comes before it" in error_by(refused.text, "pasted_transcript")
    assert textarea_text(refused.text, "pasted_transcript") == "Agent: hello first"


async def _cases(client: httpx.AsyncClient, dataset_id: str) -> list[Any]:
    listed = await client.get(f"/api/v1/datasets/{dataset_id}/test-cases")
    items: list[Any] = listed.json()["items"]
    return items


async def conversation_run(
    client: httpx.AsyncClient, database_url: str, error_at: int | None = None
) -> tuple[str, str]:
    """A CI run of one three-turn conversation whose second turn made no refund, the third
    turn's message written by the simulated user; the run's id and the case's."""
    dataset = await create_dataset(client)
    created = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json=CONVERSATION_CASE
    )
    assert created.status_code == 201, created.text
    case_id = created.json()["id"]
    run = await start_run(client, dataset_id=dataset["id"])
    turns = [REFUND[0], (REFUND[1][0], "I cannot refund that.", []), REFUND[2]]
    conversation = played(turns, ended_by="error" if error_at else "script", scripted=2,
                          error_at=error_at)  # fmt: skip
    await record_conversation(database_url, run["run_id"], case_id, conversation)
    return run["run_id"], case_id


async def test_the_case_card_shows_the_conversation_as_a_chat_with_each_turns_verdicts(
    web: httpx.AsyncClient, client: httpx.AsyncClient, database_url: str
) -> None:
    run_id, case_id = await conversation_run(client, database_url)
    card = await web.get(f"/runs/{run_id}/cases/{case_id}")
    assert card.status_code == 200, card.text
    shown = shown_text(card.text)
    assert "A refund over three turns failed" in shown
    turn_two = shown[shown.index("Turn 2") : shown.index("Turn 3")]
    assert "User It arrived broken." in turn_two
    assert "Agent · 42 ms I cannot refund that." in turn_two
    assert "Tool must be called refunded · critical failed" in turn_two
    turn_one = shown[shown.index("Turn 1") : shown.index("Turn 2")]
    assert 'orders.lookup {"order": 1234}' in turn_one
    assert "Tool must be called looked-up · critical passed" in turn_one
    turn_three = shown[shown.index("Turn 3") : shown.index("The conversation's checks")]
    assert "Simulated user (written by the simulated user's model)" in turn_three
    assert "Output must contain delay · critical passed" in turn_three
    own = shown[shown.index("The conversation's checks") :]
    assert "Tool must NOT be called never-cancelled · critical passed" in own
    assert "How it ended: The last scripted turn was answered." in own
    assert "server-timing" in card.headers


async def test_a_conversations_result_opens_in_the_editor_as_a_transcript_to_grade_again(
    person: Person, client: httpx.AsyncClient, database_url: str
) -> None:
    run_id, case_id = await conversation_run(client, database_url)
    editor = await person.web.get(f"/cases/{case_id}?reply_from={run_id}")
    pasted = textarea_text(editor.text, "pasted_transcript")
    assert json.loads(pasted)[3] == {"role": "assistant", "content": "I cannot refund that."}
    fields = dict(
        three_turns(), pasted_transcript=pasted, action="paste",
        form_id=re.findall(r'name="form_id" value="([^"]+)"', editor.text)[0],
    )  # fmt: skip
    graded = shown_text((await person.post(f"/cases/{case_id}", fields)).text)
    turn_two = graded[graded.index("Turn 2", graded.index("Preview: failed")) :]
    assert "Tool must be called" in turn_two and "stripe.refund was never called" in turn_two


async def test_a_conversation_stopped_by_an_agent_error_says_where_on_the_card(
    web: httpx.AsyncClient, client: httpx.AsyncClient, database_url: str
) -> None:
    run_id, case_id = await conversation_run(client, database_url, error_at=2)
    shown = shown_text((await web.get(f"/runs/{run_id}/cases/{case_id}")).text)
    turn_two = shown[shown.index("Turn 2") : shown.index("Turn 3")]
    assert "The agent call failed: HTTP 500 from the agent" in turn_two
    assert "The conversation stopped at turn 2: HTTP 500 from the agent." in turn_two
    assert "How it ended: An agent call failed, which stopped the conversation." in shown


async def test_compare_shows_both_transcripts_turn_by_turn(
    web: httpx.AsyncClient, client: httpx.AsyncClient, database_url: str
) -> None:
    dataset = await create_dataset(client)
    created = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json=CONVERSATION_CASE
    )
    case_id = created.json()["id"]
    baseline = await start_run(client, dataset_id=dataset["id"])
    await record_conversation(database_url, baseline["run_id"], case_id, played(REFUND))
    run = await start_run(client, dataset_id=dataset["id"], baseline_run_id=baseline["run_id"])
    worse = [REFUND[0], (REFUND[1][0], "I cannot refund that.", []), REFUND[2]]
    await record_conversation(database_url, run["run_id"], case_id, played(worse))
    page = await web.get(f"/runs/{run['run_id']}/compare")
    assert page.status_code == 200, page.text
    shown = shown_text(page.text)
    assert "A refund over three turns" in shown and "new failure" in shown
    turns = shown[shown.index("The conversation, turn by turn") :]
    turn_two = turns[turns.index("Turn 2") : turns.index("Turn 3")]
    baseline_side = turn_two[: turn_two.index("In this run")]
    assert "Sorry! I have refunded it." in baseline_side
    assert "Tool must be called refunded : passed" in baseline_side
    current_side = turn_two[turn_two.index("In this run") :]
    assert "I cannot refund that." in current_side
    assert "Tool must be called refunded : failed" in current_side
    assert "Tool must be called refunded · turn 2 changed" in shown
