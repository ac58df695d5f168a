"""Traces in the web app, as a person without JavaScript uses them: the list with its search
and filters, a trace's page, Add to dataset for one trace or several, and the retention
setting. Traces are sent over OTLP and read by the worker's own code, as in test_traces."""

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
from tests.support.databases import new_project_key
from tests.support.otlp import (
    SpanSpec,
    new_span_id,
    new_trace_id,
    protobuf_request,
    refund_conversation,
)
from tests.support.web import hidden_field, lands_on, path_of, shown_text

PROTOBUF = {"content-type": "application/x-protobuf"}
USER_TEXT = "Please refund order 1234, it arrived broken."
REPLY = "I have refunded order 1234; the money is back within 3-5 business days."
GREETING = "Hello there, what are your opening hours?"
GREETING_REPLY = "We are open from 9 to 5, Monday to Friday."
ONE_MINUTE_MS = 60_000


@pytest_asyncio.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on the test database, for the worker's reading code."""
    opened = await create_pool(database_url, min_size=1, max_size=4, acquire_timeout_s=10)
    yield opened
    await opened.close()


def greeting(start_ms: int = ONE_MINUTE_MS) -> list[SpanSpec]:
    """A trace of one model call with no tool: later than the refund conversation."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": GREETING}]}]
    reply = [{"role": "assistant", "parts": [{"type": "text", "content": GREETING_REPLY}]}]
    return [
        SpanSpec(new_trace_id(), new_span_id(), "chat opening-hours", start_ms, start_ms + 400,
                 attributes={"gen_ai.operation.name": "chat",
                             "gen_ai.request.model": "claude-haiku-5",
                             "gen_ai.input.messages": json.dumps(messages),
                             "gen_ai.output.messages": json.dumps(reply)}),
    ]  # fmt: skip


def with_history() -> list[SpanSpec]:
    """The refund conversation, its last model call sent the whole history (as chat APIs
    do): the user's turn, the assistant's tool call, the tool's answer."""
    spans = refund_conversation()
    history = [
        {"role": "user", "parts": [{"type": "text", "content": USER_TEXT}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1",
                                         "name": "orders.lookup",
                                         "arguments": {"order_id": "1234"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                    "response": {"status": "delivered"}}]},
    ]  # fmt: skip
    spans[-1].attributes["gen_ai.input.messages"] = json.dumps(history)
    return spans


def without_input(start_ms: int = 2 * ONE_MINUTE_MS) -> list[SpanSpec]:
    """A trace that recorded no input for the agent (a background job's)."""
    return [SpanSpec(new_trace_id(), new_span_id(), "nightly sync", start_ms, start_ms + 50)]


async def send(client: httpx.AsyncClient, pool: asyncpg.Pool, *traces: list[SpanSpec]) -> list[str]:
    """Send the traces over OTLP and read them as the worker would; their ids."""
    for spans in traces:
        body = protobuf_request(spans)
        response = await client.post("/v1/traces", content=body, headers=PROTOBUF)
        assert response.status_code == 200, response.text
    await read_waiting_traces(pool)
    return [spans[0].trace_id for spans in traces]


def checkbox_values(page: str, name: str) -> list[str]:
    """The values of the page's checkboxes called `name`, in order."""
    found = re.findall(rf'name="{re.escape(name)}" value="([^"]*)"', page)
    return [html.unescape(value) for value in found]


def is_checked(page: str, element_id: str) -> bool:
    """Whether the input with this id is ticked on the page."""
    tag = re.search(rf'<input[^>]*id="{re.escape(element_id)}"[^>]*>', page)
    assert tag, f"no input {element_id!r}"
    return " checked" in tag.group(0)


def add_form(page: str, dataset_id: str, **fields: Any) -> dict[str, Any]:
    """The Add to dataset form as the page offers it (every check ticked), with the dataset
    chosen and `fields` changed."""
    data: dict[str, Any] = {
        "csrf_token": hidden_field(page, "csrf_token"),
        "form_id": hidden_field(page, "form_id"),
        "dataset": dataset_id,
    }
    for index in range(50):
        if f'name="trace-{index}"' not in page:
            break
        data[f"trace-{index}"] = hidden_field(page, f"trace-{index}")
        data[f"trace-{index}-checks"] = checkbox_values(page, f"trace-{index}-checks")
    return data | fields


async def checks_of(client: httpx.AsyncClient, case_id: str) -> list[dict[str, Any]]:
    case = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
    return [{k: v for k, v in check.items() if k != "id"} for check in case["checks"]]


async def test_the_list_shows_traces_newest_first_with_search_and_filters(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    refund_id, greeting_id = await send(client, pool, refund_conversation(), greeting())
    listing = await web.get("/traces")
    assert listing.status_code == 200
    shown = shown_text(listing.text)
    assert shown.index(GREETING) < shown.index(USER_TEXT), "newest first"
    assert "2026-12-01 10:00:00 UTC invoke_agent support-bot" in shown
    assert REPLY in shown and GREETING_REPLY in shown
    assert "orders.lookup , stripe.refund (2 calls)" in shown
    assert "error card network timeout" in shown, "the error mark is a word"
    assert "900 ms claude-sonnet-5-5" in shown
    assert f'href="/traces/{refund_id}"' in listing.text
    timing = listing.headers["server-timing"]
    assert "db;dur=" in timing and "total;dur=" in timing
    assert '<option value="stripe.refund">stripe.refund</option>' in listing.text

    def listed(page: httpx.Response) -> list[str]:
        return [tid for tid in (refund_id, greeting_id) if f"/traces/{tid}" in page.text]

    assert listed(await web.get("/traces", params={"q": "ARRIVED broken"})) == [refund_id]
    assert listed(await web.get("/traces", params={"q": "opening hours"})) == [greeting_id]
    assert listed(await web.get("/traces", params={"tool": "stripe.refund"})) == [refund_id]
    assert listed(await web.get("/traces", params={"errors": "on"})) == [refund_id]
    later = await web.get("/traces", params={"after": "2026-12-01T10:00:30"})
    assert listed(later) == [greeting_id]
    earlier = await web.get("/traces", params={"before": "2026-12-01T10:00:30"})
    assert listed(earlier) == [refund_id]
    nothing = await web.get("/traces", params={"q": "no such words anywhere"})
    assert "No traces match." in shown_text(nothing.text)
    wrong = await web.get("/traces", params={"after": "last tuesday"})
    assert wrong.status_code == 200
    assert "Enter a date and time in UTC" in shown_text(wrong.text)
    assert 'aria-invalid="true"' in wrong.text


async def test_the_list_pages_fifty_at_a_time(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    ids = await send(client, pool, *(greeting(index * 1000) for index in range(52)))
    first = await web.get("/traces", params={"q": "opening"})
    assert sum(f"/traces/{tid}" in first.text for tid in ids) == 50
    link = re.search(r'href="(/traces\?[^"]*cursor=[^"]+)">Next page', first.text)
    assert link, "a next page link"
    second = await web.get(html.unescape(link.group(1)))
    assert [tid for tid in ids if f"/traces/{tid}" in second.text] == ids[:2]
    assert "Next page" not in second.text


async def test_with_no_traces_the_list_says_how_to_send_them(
    web: httpx.AsyncClient, base_url: str
) -> None:
    shown = shown_text((await web.get("/traces")).text)
    assert f"Endpoint {base_url}/v1/traces" in shown
    assert f"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT={base_url}/v1/traces" in shown
    assert "OTEL_EXPORTER_OTLP_HEADERS=x-api-key=YOUR_API_KEY" in shown
    assert "Authorization: Bearer" in shown and "x-api-key" in shown


async def test_a_trace_page_shows_the_conversation_timeline_totals_and_raw_spans(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    (trace_id,) = await send(client, pool, with_history())
    page = await web.get(f"/traces/{trace_id}")
    assert page.status_code == 200
    shown = shown_text(page.text)
    assert "Model claude-sonnet-5-5" in shown
    assert "Tokens 420 in, 70 out" in shown
    assert "Duration 900 ms" in shown
    assert "Error error card network timeout" in shown
    assert f"Input {USER_TEXT} Final reply {REPLY}" in shown
    assert f"user {USER_TEXT}" in shown, "the conversation, by role"
    assert "assistant called orders.lookup" in shown, "tool call names on the assistant's turn"
    assert f"assistant {REPLY}" in shown
    lookup = shown.index("1. orders.lookup")
    refund = shown.index("2. stripe.refund error")
    assert lookup < refund, "calls in start order"
    assert "Started 210 ms into the trace · took 90 ms" in shown
    assert '"order_id": "1234"' in html.unescape(page.text), "arguments as indented JSON"
    assert '"status": "delivered"' in html.unescape(page.text)
    assert "Error: card network timeout" in shown
    bars = re.findall(r'<svg class="time-bar"[^>]*role="img" aria-label="([^"]+)"', page.text)
    assert bars[0] == (
        "Starts 210 ms into the trace and takes 90 ms, of 900 ms in all "
        "(from 23% to 33% of the bar)."
    )
    assert "<details>" in page.text, "the raw spans fold away"
    assert "custom.team payments" in shown, "an unknown attribute is shown too"
    assert "service.name support-bot" in shown
    assert "None yet." in shown, "no case made from it yet"


async def test_an_unknown_trace_or_another_projects_is_not_found(
    web: httpx.AsyncClient, base_url: str, database_url: str, pool: asyncpg.Pool
) -> None:
    headers = {"x-api-key": await new_project_key(database_url)}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as other:
        (theirs,) = await send(other, pool, refund_conversation())
    for path in (f"/traces/{theirs}", f"/traces/{new_trace_id()}", "/traces/not-a-trace"):
        page = await web.get(path)
        assert page.status_code == 404, path
        assert "Not found" in shown_text(page.text)
    assert (await web.get("/traces/add", params={"trace": theirs})).status_code == 404


async def test_add_to_dataset_makes_a_case_with_the_checks_left_ticked(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    (trace_id,) = await send(client, pool, refund_conversation())
    dataset = await create_dataset(client, name="Refunds")
    page = (await web.get(f"/traces/{trace_id}")).text
    offered = checkbox_values(page, "trace-0-checks")
    assert [json.loads(value)["type"] for value in offered] == [
        "tool_called", "tool_called", "tool_order",
    ]  # fmt: skip
    assert all(is_checked(page, f"trace-0-check-{index}") for index in range(3))
    assert not is_checked(page, "trace-0-use_reply"), "the reply is a draft, not used"
    assert f">{REPLY}</textarea>" in page
    assert "Tool must be called: stripe.refund (critical)" in shown_text(page)

    kept = [offered[0], offered[2]]  # stripe.refund unticked
    answer = await web.post("/traces/add", data=add_form(page, dataset["id"], **{
        "trace-0-checks": kept,
    }))  # fmt: skip
    assert answer.status_code == 303, answer.text
    case_path = path_of(answer)
    assert case_path.startswith("/cases/") and case_path.endswith("?added=1")
    case_id = case_path.split("/")[2].split("?")[0]
    assert await checks_of(client, case_id) == [
        {"type": "tool_called", "tool": "orders.lookup", "severity": "critical"},
        {"type": "tool_order", "tools": ["orders.lookup", "stripe.refund"], "severity": "critical"},
    ]
    case = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
    assert case["input"] == USER_TEXT
    assert case["expected_output"] is None, "the reply only when chosen"
    assert case["source_trace_id"] == trace_id

    editor = await web.get(case_path)
    shown = shown_text(editor.text)
    assert "Added 1 test case from the trace" in shown
    assert f"Made from trace {trace_id}" in shown
    assert f'href="/traces/{trace_id}"' in editor.text
    back = shown_text((await web.get(f"/traces/{trace_id}")).text)
    assert f"Test case {case_id[:8]} in Refunds" in back


async def test_the_reply_becomes_the_expected_output_only_when_chosen(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    (trace_id,) = await send(client, pool, refund_conversation())
    dataset = await create_dataset(client)
    page = (await web.get(f"/traces/{trace_id}")).text
    edited = "The order is refunded; it takes 3-5 business days."
    answer = await web.post("/traces/add", data=add_form(page, dataset["id"], **{
        "trace-0-use_reply": "on", "trace-0-expected_output": edited, "trace-0-checks": [],
    }))  # fmt: skip
    assert answer.status_code == 303, answer.text
    case_id = path_of(answer).split("/")[2].split("?")[0]
    case = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
    assert case["expected_output"] == edited
    assert case["checks"] == [], "every offered check was unticked"


async def test_add_to_dataset_for_several_traces_at_once(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    refund_id, greeting_id, silent_id = await send(
        client, pool, refund_conversation(), greeting(), without_input()
    )
    dataset = await create_dataset(client, name="From production")
    listing = (await web.get("/traces")).text
    assert 'action="/traces/add"' in listing
    assert f'name="trace" value="{refund_id}"' in listing, "a checkbox per row"
    chosen = {"trace": [refund_id, greeting_id, silent_id]}
    page = await web.get("/traces/add", params=chosen)
    assert page.status_code == 200
    shown = shown_text(page.text)
    assert "recorded no input for the agent, so this one is not added: nightly sync" in shown
    assert hidden_field(page.text, "trace-0") == refund_id
    assert hidden_field(page.text, "trace-1") == greeting_id
    assert 'name="trace-2"' not in page.text
    assert "It called no tools, so no check is offered" in shown

    answer = await web.post("/traces/add", data=add_form(page.text, dataset["id"]))
    assert answer.status_code == 303, answer.text
    assert path_of(answer) == f"/datasets/{dataset['id']}?imported=2"
    landing = shown_text((await web.get(path_of(answer))).text)
    assert "Imported 2 test cases." in landing
    cases = (await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")).json()["items"]
    by_input = {case["input"]: case for case in cases}
    assert set(by_input) == {USER_TEXT, GREETING}
    assert len(by_input[USER_TEXT]["checks"]) == 3, "its own offered checks"
    assert by_input[GREETING]["checks"] == []
    assert {case["source_trace_id"] for case in cases} == {refund_id, greeting_id}

    again = await web.post("/traces/add", data=add_form(page.text, dataset["id"]))
    assert path_of(again) == path_of(answer), "the same form sent twice adds once"
    cases = (await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")).json()["items"]
    assert len(cases) == 2


async def test_errors_are_shown_by_field_and_nothing_is_lost(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    (trace_id,) = await send(client, pool, refund_conversation())
    dataset = await create_dataset(client)
    page = (await web.get(f"/traces/{trace_id}")).text
    offered = checkbox_values(page, "trace-0-checks")
    answer = await web.post("/traces/add", data=add_form(page, "", **{
        "trace-0-checks": [offered[1]], "trace-0-use_reply": "on",
        "trace-0-expected_output": "  ",
    }))  # fmt: skip
    assert answer.status_code == 422
    shown = shown_text(answer.text)
    assert "Choose the dataset the test cases go to." in shown
    assert "Write the expected output, or untick" in shown
    assert 'id="dataset-error"' in answer.text
    assert 'id="trace-0-expected_output-error"' in answer.text
    assert [is_checked(answer.text, f"trace-0-check-{i}") for i in range(3)] == [
        False, True, False,
    ]  # fmt: skip
    assert is_checked(answer.text, "trace-0-use_reply")
    cases = (await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")).json()["items"]
    assert cases == []


async def test_add_to_dataset_without_the_csrf_token_is_refused(
    web: httpx.AsyncClient, client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    (trace_id,) = await send(client, pool, refund_conversation())
    dataset = await create_dataset(client)
    page = (await web.get(f"/traces/{trace_id}")).text
    data = add_form(page, dataset["id"])
    del data["csrf_token"]
    answer = await web.post("/traces/add", data=data)
    assert answer.status_code == 403
    forged = await web.post("/traces/add", data=data | {"csrf_token": "forged"})
    assert forged.status_code == 403
    cases = (await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")).json()["items"]
    assert cases == []


async def test_another_projects_trace_cannot_be_added(
    web: httpx.AsyncClient, client: httpx.AsyncClient, base_url: str, database_url: str,
    pool: asyncpg.Pool,
) -> None:  # fmt: skip
    (mine,) = await send(client, pool, refund_conversation())
    headers = {"x-api-key": await new_project_key(database_url)}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as other:
        (theirs,) = await send(other, pool, refund_conversation())
    dataset = await create_dataset(client)
    page = (await web.get(f"/traces/{mine}")).text
    answer = await web.post("/traces/add", data=add_form(page, dataset["id"], **{
        "trace-0": theirs,
    }))  # fmt: skip
    assert answer.status_code == 404
    cases = (await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")).json()["items"]
    assert cases == []


async def test_the_retention_is_set_under_settings(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    page = await web.get("/settings")
    assert 'id="retention_days" name="retention_days" type="number" value="30"' in page.text
    csrf = hidden_field(page.text, "csrf_token")
    saved = await web.post("/settings/traces", data={"csrf_token": csrf, "retention_days": "7"})
    assert saved.status_code == 303
    assert lands_on(saved).endswith("/settings?traces_saved=1#traces")
    shown = shown_text((await web.get(path_of(saved))).text)
    assert "Traces are now kept 7 days." in shown
    assert (await client.get("/api/v1/trace-settings")).json() == {"retention_days": 7}

    for typed, problem in (("0", "At least 1."), ("3651", "At most 3650."), ("soon", "A number")):
        refused = await web.post(
            "/settings/traces", data={"csrf_token": csrf, "retention_days": typed}
        )
        assert refused.status_code == 422, typed
        assert problem in shown_text(refused.text), typed
        assert f'value="{typed}"' in refused.text, "what was typed is kept"
    assert (await client.get("/api/v1/trace-settings")).json() == {"retention_days": 7}
    forged = await web.post("/settings/traces", data={"retention_days": "9"})
    assert forged.status_code == 403


async def test_a_trace_page_and_answer_cut_each_long_attribute_saying_so(
    client: httpx.AsyncClient, web: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    spans = refund_conversation()
    for spec in spans:
        spec.attributes["app.payload"] = "x" * 1_500_000  # 1.5 MB in each of 5 spans
    spans[0].attributes["app.rows"] = list(range(5_000))
    (trace_id,) = await send(client, pool, spans)

    answer = await client.get(f"/api/v1/traces/{trace_id}")
    assert answer.status_code == 200
    assert len(answer.content) < 1_000_000, "not 7.5 MB of payloads"
    root = answer.json()["spans"][0]
    assert root["attributes"]["app.payload"] == "x" * 10_000 + "… (cut at 10,000 characters)"
    assert root["attributes"]["app.rows"].endswith("… (cut at 10,000 characters)")
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"

    page = await web.get(f"/traces/{trace_id}")
    assert page.status_code == 200
    assert len(page.content) < 1_000_000
    assert "… (cut at 10,000 characters)" in page.text
