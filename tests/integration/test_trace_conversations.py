"""Conversations from traces (contract sections 10 and 13, "From traces"): the traces whose
spans share `gen_ai.conversation.id` (or `session.id`) are one conversation, shown together in
time order, and `Add to dataset` on it makes a conversation case: each trace's input a
scripted user turn, each turn offered the tool checks of its own calls.

Real OTLP requests are exported to the API on 127.0.0.1 and read by the worker's own code
against the same database, as in test_traces.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest_asyncio

from agentlasso.db.pool import create_pool
from agentlasso_workers.trace_reading import read_waiting_traces
from tests.support.api import create_dataset
from tests.support.otlp import SpanSpec, json_request, new_trace_id, protobuf_request
from tests.support.otlp_conversations import REPLIES, TOOLS, USERS, parts, three_turns, turn_trace
from tests.support.web import hidden_field, path_of, shown_text

PROTOBUF = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}


@pytest_asyncio.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on the test database, for the worker's reading code."""
    opened = await create_pool(database_url, min_size=1, max_size=4, acquire_timeout_s=10)
    yield opened
    await opened.close()


async def send(client: httpx.AsyncClient, pool: asyncpg.Pool, *traces: list[SpanSpec]) -> None:
    """Export each trace over OTLP/protobuf and read them as the worker does."""
    for spans in traces:
        response = await client.post(
            "/v1/traces", content=protobuf_request(spans), headers=PROTOBUF
        )
        assert response.status_code == 200, response.text
    await read_waiting_traces(pool)


def tool_called(tool: str) -> dict[str, Any]:
    return {"type": "tool_called", "tool": tool, "severity": "critical"}


def without_ids(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in check.items() if key != "id"} for check in checks]


OFFERED_BY_TURN = [
    [tool_called("lookup_order")],
    [tool_called("lookup_order"), tool_called("update_address"),
     {"type": "tool_order", "tools": ["lookup_order", "update_address"], "severity": "critical"}],
    [],
]  # fmt: skip


async def test_traces_sharing_a_conversation_id_are_read_back_as_one_conversation_in_time_order(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    conversation_id = f"conv-{new_trace_id()[:12]}"
    first, second, third = three_turns(conversation_id)
    await send(client, pool, third, first)  # out of order, and the middle one later still
    response = await client.post("/v1/traces", content=json_request(second), headers=JSON)
    assert response.status_code == 200, response.text
    await read_waiting_traces(pool)

    trace = (await client.get(f"/api/v1/traces/{second[0].trace_id}")).json()
    assert trace["conversation_id"] == conversation_id
    answer = await client.get(f"/api/v1/traces/conversations/{conversation_id}")
    assert answer.status_code == 200, answer.text
    conversation = answer.json()
    assert conversation["conversation_id"] == conversation_id
    ids = [spans[0].trace_id for spans in (first, second, third)]
    assert [t["trace_id"] for t in conversation["traces"]] == ids, "earliest first"
    assert [turn["user"] for turn in conversation["turns"]] == list(USERS)
    assert [turn["tool_calls"] for turn in conversation["turns"]] == [list(t) for t in TOOLS]
    assert [turn["reply"] for turn in conversation["turns"]] == list(REPLIES)
    assert conversation["more"] is False
    listed = (await client.get("/api/v1/traces")).json()["items"]
    assert {item["conversation_id"] for item in listed} == {conversation_id}

    missing = await client.get("/api/v1/traces/conversations/no-such-conversation")
    assert missing.status_code == 404


async def test_a_conversation_becomes_a_conversation_case_with_each_turns_tool_checks(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    conversation_id = f"conv-{new_trace_id()[:12]}"
    traces = three_turns(conversation_id)
    await send(client, pool, *traces)
    dataset = await create_dataset(client, name="Conversations")
    made = await client.post(
        f"/api/v1/traces/conversations/{conversation_id}/test-case",
        json={"dataset_id": dataset["id"]},
    )
    assert made.status_code == 201, made.text
    case = made.json()
    assert case["input"] is None
    turns = case["conversation"]["turns"]
    assert [turn["user"] for turn in turns] == list(USERS)
    assert [without_ids(turn.get("checks", [])) for turn in turns] == OFFERED_BY_TURN
    every_id = [check["id"] for turn in turns for check in turn.get("checks", [])]
    assert len(every_id) == len(set(every_id)) == 4, "check ids are unique in the whole case"
    assert case["checks"] == []
    assert case["expected_output"] is None
    assert case["source_trace_id"] == traces[0][0].trace_id
    assert case["suggestions"] == {"expected_output": REPLIES[-1]}
    stored = (await client.get(f"/api/v1/test-cases/{case['id']}")).json()
    assert stored["conversation"] == case["conversation"]

    again = (await client.get(f"/api/v1/traces/conversations/{conversation_id}")).json()
    assert again["test_case_ids"] == [case["id"]]


async def test_checks_ticked_off_make_a_conversation_case_without_checks(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    conversation_id = f"session-{new_trace_id()[:12]}"
    await send(client, pool, *three_turns(conversation_id, key="session.id"))
    dataset = await create_dataset(client)
    made = await client.post(
        f"/api/v1/traces/conversations/{conversation_id}/test-case",
        json={"dataset_id": dataset["id"], "checks": [], "expected_output": "Bye."},
    )
    assert made.status_code == 201, made.text
    case = made.json()
    assert [turn["user"] for turn in case["conversation"]["turns"]] == list(USERS)
    assert all(not turn.get("checks") for turn in case["conversation"]["turns"])
    assert case["checks"] == []
    assert case["expected_output"] == "Bye."


async def test_a_trace_whose_input_holds_several_user_messages_becomes_a_conversation_case(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    third = turn_trace(3, "")  # no conversation id: the history alone tells the turns
    for span in third:
        span.attributes.pop("gen_ai.conversation.id", None)
    # The model was sent the whole history, the assistant's earlier tool requests included.
    history = [
        parts("user", USERS[0]),
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "lookup_order",
                                         "arguments": {"order_id": "4417"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
                                    "response": {"status": "shipped"}}]},
        parts("assistant", REPLIES[0]),
        parts("user", USERS[1]),
        parts("assistant", REPLIES[1]),
        parts("user", USERS[2]),
    ]  # fmt: skip
    third[1].attributes["gen_ai.input.messages"] = json.dumps(history)
    await send(client, pool, third)
    trace_id = third[0].trace_id
    assert (await client.get(f"/api/v1/traces/{trace_id}")).json()["conversation_id"] is None
    dataset = await create_dataset(client)
    made = await client.post(
        f"/api/v1/traces/{trace_id}/test-case", json={"dataset_id": dataset["id"]}
    )
    assert made.status_code == 201, made.text
    case = made.json()
    turns = case["conversation"]["turns"]
    assert [turn["user"] for turn in turns] == list(USERS)
    assert [without_ids(turn.get("checks", [])) for turn in turns] == [
        [tool_called("lookup_order")], [], [],
    ]  # fmt: skip
    assert case["source_trace_id"] == trace_id


def checkbox_values(page: str, name: str) -> list[str]:
    """The values of the page's checkboxes called `name`, in order."""
    found = re.findall(rf'name="{re.escape(name)}" value="([^"]*)"', page)
    return [html.unescape(value) for value in found]


async def test_the_conversation_page_shows_the_turns_and_adds_a_conversation_case(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    conversation_id = f"conv-{new_trace_id()[:12]}"
    traces = three_turns(conversation_id)
    await send(client, pool, *traces)
    dataset = await create_dataset(client, name="From conversations")

    trace_page = (await web.get(f"/traces/{traces[1][0].trace_id}")).text
    assert f'href="/traces/conversations/{conversation_id}"' in trace_page
    assert "Turn 2 of 3 of conversation" in shown_text(trace_page)
    listing = (await web.get("/traces")).text
    assert f'href="/traces/conversations/{conversation_id}"' in listing

    page = await web.get(f"/traces/conversations/{conversation_id}")
    assert page.status_code == 200, page.text
    shown = shown_text(page.text)
    positions = [shown.index(text) for text in USERS]
    assert positions == sorted(positions), "the turns in time order"
    for spans in traces:
        assert f'href="/traces/{spans[0].trace_id}"' in page.text, "each turn links its trace"
    offered = {
        turn: without_ids(
            [json.loads(v) for v in checkbox_values(page.text, f"turn-{turn}-checks")]
        )
        for turn in (1, 2, 3)
    }
    assert offered == {n: OFFERED_BY_TURN[n - 1] for n in (1, 2, 3)}

    form = {
        "csrf_token": hidden_field(page.text, "csrf_token"),
        "form_id": hidden_field(page.text, "form_id"),
        "dataset": dataset["id"],
        "turn-1-checks": checkbox_values(page.text, "turn-1-checks"),
        # turn 2's update_address and order unticked: only lookup_order kept
        "turn-2-checks": checkbox_values(page.text, "turn-2-checks")[:1],
    }
    answer = await web.post(f"/traces/conversations/{conversation_id}/add", data=form)
    assert answer.status_code == 303, answer.text
    case_path = path_of(answer)
    assert case_path.startswith("/cases/") and case_path.endswith("?added=1")
    case_id = case_path.split("/")[2].split("?")[0]
    case = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
    turns = case["conversation"]["turns"]
    assert [turn["user"] for turn in turns] == list(USERS)
    assert [without_ids(turn.get("checks", [])) for turn in turns] == [
        [tool_called("lookup_order")], [tool_called("lookup_order")], [],
    ]  # fmt: skip

    again = await web.post(f"/traces/conversations/{conversation_id}/add", data=form)
    assert path_of(again) == case_path, "the same form sent twice adds once"

    none_ticked = {key: value for key, value in form.items() if not key.endswith("-checks")}
    none_ticked["form_id"] = "another-form-0000001"
    bare = await web.post(f"/traces/conversations/{conversation_id}/add", data=none_ticked)
    assert bare.status_code == 303, bare.text
    bare_id = path_of(bare).split("/")[2].split("?")[0]
    bare_case = (await client.get(f"/api/v1/test-cases/{bare_id}")).json()
    assert [turn["user"] for turn in bare_case["conversation"]["turns"]] == list(USERS)
    assert all(not turn.get("checks") for turn in bare_case["conversation"]["turns"])

    back = shown_text((await web.get(f"/traces/conversations/{conversation_id}")).text)
    assert f"Test case {case_id[:8]} in From conversations" in back

    forged = await web.post(
        f"/traces/conversations/{conversation_id}/add", data=form | {"csrf_token": "forged"}
    )
    assert forged.status_code == 403


async def test_a_trace_page_offers_a_conversation_case_when_its_input_holds_several_turns(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    third = turn_trace(3, "")
    for span in third:
        span.attributes.pop("gen_ai.conversation.id", None)
    history = [
        parts("user", USERS[0]),
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "lookup_order",
                                         "arguments": {"order_id": "4417"}}]},
        parts("assistant", REPLIES[0]),
        parts("user", USERS[1]),
        parts("assistant", REPLIES[1]),
        parts("user", USERS[2]),
    ]  # fmt: skip
    third[1].attributes["gen_ai.input.messages"] = json.dumps(history)
    await send(client, pool, third)
    trace_id = third[0].trace_id
    dataset = await create_dataset(client)
    page = (await web.get(f"/traces/{trace_id}")).text
    assert f'action="/traces/{trace_id}/add-conversation"' in page
    assert "holds several user messages" in shown_text(page)
    offered = checkbox_values(page, "turn-1-checks")
    assert without_ids([json.loads(value) for value in offered]) == [tool_called("lookup_order")]
    form = {
        "csrf_token": hidden_field(page, "csrf_token"),
        "form_id": hidden_field(page, "form_id"),
        "dataset": dataset["id"],
        "turn-1-checks": offered,
        "use_reply": "on",
        "expected_output": "Says goodbye.",
    }
    answer = await web.post(f"/traces/{trace_id}/add-conversation", data=form)
    assert answer.status_code == 303, answer.text
    case_id = path_of(answer).split("/")[2].split("?")[0]
    case = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
    assert [turn["user"] for turn in case["conversation"]["turns"]] == list(USERS)
    assert without_ids(case["conversation"]["turns"][0]["checks"]) == [tool_called("lookup_order")]
    assert case["expected_output"] == "Says goodbye."
    assert case["source_trace_id"] == trace_id

    unchosen = await web.post(
        f"/traces/{trace_id}/add-conversation", data=form | {"dataset": "", "form_id": "x" * 20}
    )
    assert unchosen.status_code == 422
    assert "Choose the dataset the test cases go to." in shown_text(unchosen.text)
