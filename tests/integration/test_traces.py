"""Trace ingestion over OTLP/HTTP, reading traces back, and test cases made from them.

The API is served on 127.0.0.1; what a worker does with accepted requests is done here by the
worker's own reading code, against the same database (tests/e2e drive real worker processes).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from agentlasso.db import trace_lists
from agentlasso.db.pool import create_pool
from agentlasso.services.api_keys import hash_key
from agentlasso_workers import trace_reading
from agentlasso_workers.trace_reading import (
    BATCHES_PER_PASS,
    delete_expired_traces,
    read_some,
    read_waiting_traces,
)
from tests.support.api import create_dataset
from tests.support.databases import new_project_key
from tests.support.otlp import (
    SpanSpec,
    json_request,
    new_span_id,
    new_trace_id,
    protobuf_request,
    refund_conversation,
)

PROTOBUF = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}
USER_TEXT = "Please refund order 1234, it arrived broken."
REPLY = "I have refunded order 1234; the money is back within 3-5 business days."


@pytest_asyncio.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on the test database, for the worker's reading code."""
    opened = await create_pool(database_url, min_size=1, max_size=4, acquire_timeout_s=10)
    yield opened
    await opened.close()


async def export(
    client: httpx.AsyncClient, body: bytes, headers: dict[str, str], path: str = "/v1/traces"
) -> httpx.Response:
    return await client.post(path, content=body, headers=headers)


async def trace_of(client: httpx.AsyncClient, trace_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/v1/traces/{trace_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_protobuf_export_becomes_a_trace_with_its_conversation_and_tools(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient, api_key: str, pool: asyncpg.Pool
) -> None:
    spans = refund_conversation()
    trace_id = spans[0].trace_id
    bearer = {"authorization": f"Bearer {api_key}"}  # as OTLP exporters are configured
    gzipped = {**PROTOBUF, **bearer, "content-encoding": "gzip"}
    response = await export(anonymous, gzip.compress(protobuf_request(spans)), gzipped)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-protobuf")
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert not answer.HasField("partial_success")

    await read_waiting_traces(pool)
    trace = await trace_of(client, trace_id)
    assert trace["trace_id"] == trace_id
    assert trace["name"] == "invoke_agent support-bot"
    assert trace["input"] == USER_TEXT
    assert trace["output"] == REPLY
    assert [call["name"] for call in trace["tool_calls"]] == ["orders.lookup", "stripe.refund"]
    assert trace["tool_calls"][0]["arguments"] == {"order_id": "1234"}
    assert trace["tool_calls"][0]["result"] == {"status": "delivered"}
    assert trace["tool_calls"][1]["error"] == "card network timeout"
    assert trace["model"] == "claude-sonnet-5-5"
    assert trace["usage"] == {"input_tokens": 420, "output_tokens": 70}
    assert trace["duration_ms"] == 900
    assert trace["started_at"].startswith("2026-12-01T10:00:00")
    assert len(trace["spans"]) == 5
    refund = next(s for s in trace["spans"] if s["name"] == "execute_tool stripe.refund")
    assert refund["attributes"]["custom.team"] == "payments"  # unknown attributes are kept
    assert refund["status_code"] == "error"


async def test_spans_of_one_trace_in_several_json_requests_in_any_order_make_one_trace(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    spans = refund_conversation()
    trace_id = spans[0].trace_id
    for part in (spans[3:], spans[1:3]):
        response = await export(client, json_request(part), JSON, "/api/v1/traces/otlp")
        assert response.status_code == 200, response.text
        assert response.json() == {}
        await read_waiting_traces(pool)
    partial = await trace_of(client, trace_id)
    assert partial["span_count"] == 4

    response = await export(client, json_request(spans[:1]), JSON)
    await read_waiting_traces(pool)
    whole = await trace_of(client, trace_id)
    assert whole["span_count"] == 5
    assert whole["name"] == "invoke_agent support-bot"
    assert whole["output"] == REPLY
    assert [call["name"] for call in whole["tool_calls"]] == ["orders.lookup", "stripe.refund"]


async def test_a_span_sent_twice_is_stored_once(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    spans = refund_conversation()
    body = protobuf_request(spans)
    for _ in range(2):
        assert (await export(client, body, PROTOBUF)).status_code == 200
    await read_waiting_traces(pool)
    assert (await export(client, body, PROTOBUF)).status_code == 200
    await read_waiting_traces(pool)
    trace = await trace_of(client, spans[0].trace_id)
    assert trace["span_count"] == 5
    assert len(trace["spans"]) == 5
    assert len(trace["tool_calls"]) == 2


async def test_spans_with_bad_ids_are_refused_by_position_and_the_rest_stored(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    good = refund_conversation()
    bad_trace = SpanSpec("00" * 16, new_span_id(), "zero trace id", 0, 1)
    bad_span = SpanSpec(new_trace_id(), "abc", "short span id", 0, 1)
    body = json_request([good[0], bad_trace, *good[1:], bad_span])
    response = await export(client, body, JSON)
    assert response.status_code == 200, response.text
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2"
    assert "span 1: traceId must be 16 bytes" in partial["errorMessage"]
    assert "span 6: spanId must be 8 bytes" in partial["errorMessage"]

    proto = await export(client, protobuf_request([bad_trace]), PROTOBUF)
    answer = ExportTraceServiceResponse.FromString(proto.content)
    assert answer.partial_success.rejected_spans == 1
    assert "span 0: traceId" in answer.partial_success.error_message

    await read_waiting_traces(pool)
    assert (await trace_of(client, good[0].trace_id))["span_count"] == 5


@pytest.mark.parametrize(
    ("headers", "body", "status", "says"),
    [
        ({"content-type": "text/plain"}, b"hello", 415, "application/x-protobuf"),
        (PROTOBUF, b"\xff\xff\xff\xff not protobuf", 400, "ExportTraceServiceRequest"),
        (JSON, b"{not json", 400, "OTLP/JSON"),
        (JSON, b'{"resourceSpans": 5}', 400, "OTLP/JSON"),
        ({**JSON, "content-encoding": "gzip"}, b"not gzip at all", 400, "gzip"),
        ({**JSON, "content-encoding": "br"}, b"{}", 400, "Content-Encoding"),
    ],
)
async def test_unreadable_requests_get_a_problem_saying_why(
    client: httpx.AsyncClient, headers: dict[str, str], body: bytes, status: int, says: str
) -> None:
    response = await export(client, body, headers)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert says in response.json()["detail"]
    if status == 415:
        assert response.json()["errors"][0]["header"] == "content-type"


async def test_without_a_valid_key_nothing_is_accepted(anonymous: httpx.AsyncClient) -> None:
    body = protobuf_request(refund_conversation())
    missing = await anonymous.post("/v1/traces", content=body, headers=PROTOBUF)
    wrong = await anonymous.post(
        "/v1/traces", content=body, headers={**PROTOBUF, "authorization": "Bearer al_nope"}
    )
    assert missing.status_code == wrong.status_code == 401
    assert missing.headers["content-type"] == "application/problem+json"


async def test_too_many_spans_or_too_many_bytes_are_refused_whole(
    client: httpx.AsyncClient,
) -> None:
    trace_id = new_trace_id()
    many = [SpanSpec(trace_id, new_span_id(), "s", 0, 1) for _ in range(10_001)]
    response = await export(client, protobuf_request(many), PROTOBUF)
    assert response.status_code == 413, response.text
    assert "at most 10000 spans" in response.json()["detail"]
    assert "10001" in response.json()["detail"]

    bomb = gzip.compress(b" " * (40 * 1024 * 1024))  # 40 MiB of spaces, 40 KiB gzipped
    response = await export(client, bomb, {**JSON, "content-encoding": "gzip"})
    assert response.status_code == 413, response.text
    assert "decompressed" in response.json()["detail"]


async def test_traces_are_listed_newest_first_searched_and_filtered(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    conversations = []
    for index in range(5):
        spans = refund_conversation()
        for spec in spans:
            spec.start_ms += index * 10_000
            spec.end_ms += index * 10_000
        if index == 2:
            spans = [s for s in spans if "stripe.refund" not in s.name]
        conversations.append(spans)
        assert (await export(client, protobuf_request(spans), PROTOBUF)).status_code == 200
    await read_waiting_traces(pool)
    ids = [spans[0].trace_id for spans in conversations]

    first = (await client.get("/api/v1/traces", params={"limit": 2})).json()
    assert [t["trace_id"] for t in first["items"]] == [ids[4], ids[3]]
    second = (
        await client.get("/api/v1/traces", params={"limit": 2, "cursor": first["next_cursor"]})
    ).json()
    assert [t["trace_id"] for t in second["items"]] == [ids[2], ids[1]]

    found = (await client.get("/api/v1/traces", params={"q": "ARRIVED broken"})).json()
    assert [t["trace_id"] for t in found["items"]] == ids[::-1]
    none = (await client.get("/api/v1/traces", params={"q": "100% of nothing_"})).json()
    assert none["items"] == []

    without_refund = [ids[4], ids[3], ids[1], ids[0]]  # the third never called stripe.refund
    refunds = (await client.get("/api/v1/traces", params={"tool": "stripe.refund"})).json()
    assert [t["trace_id"] for t in refunds["items"]] == without_refund
    errors = (await client.get("/api/v1/traces", params={"errors_only": "true"})).json()
    assert [t["trace_id"] for t in errors["items"]] == without_refund
    assert {t["error"] for t in errors["items"]} == {"card network timeout"}

    bad = await client.get("/api/v1/traces", params={"cursor": "yesterday"})
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["parameter"] == "cursor"


async def test_a_trace_becomes_a_test_case_linked_both_ways(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    spans = refund_conversation()
    trace_id = spans[0].trace_id
    await export(client, protobuf_request(spans), PROTOBUF)
    await read_waiting_traces(pool)
    dataset = await create_dataset(client)

    response = await client.post(
        f"/api/v1/traces/{trace_id}/test-case", json={"dataset_id": dataset["id"]}
    )
    assert response.status_code == 201, response.text
    case = response.json()
    assert case["input"] == USER_TEXT
    assert case["source_trace_id"] == trace_id
    assert case["expected_output"] is None
    assert case["suggestions"] == {"expected_output": REPLY}
    checks = [{k: v for k, v in c.items() if k != "id"} for c in case["checks"]]
    assert checks == [
        {"type": "tool_called", "tool": "orders.lookup", "severity": "critical"},
        {"type": "tool_called", "tool": "stripe.refund", "severity": "critical"},
        {"type": "tool_order", "tools": ["orders.lookup", "stripe.refund"], "severity": "critical"},
    ]
    listed = (await client.get(f"/api/v1/test-cases/{case['id']}")).json()
    assert listed["source_trace_id"] == trace_id
    assert (await trace_of(client, trace_id))["test_case_ids"] == [case["id"]]

    chosen = await client.post(
        f"/api/v1/traces/{trace_id}/test-case",
        json={
            "dataset_id": dataset["id"],
            "checks": [{"type": "tool_not_called", "tool": "stripe.refund"}],
            "expected_output": REPLY,
        },
    )
    assert chosen.status_code == 201, chosen.text
    assert [c["type"] for c in chosen.json()["checks"]] == ["tool_not_called"]
    assert chosen.json()["expected_output"] == REPLY


async def test_a_case_from_a_trace_needs_a_dataset_and_a_trace_of_the_project(
    client: httpx.AsyncClient, base_url: str, database_url: str, pool: asyncpg.Pool
) -> None:
    spans = refund_conversation()
    await export(client, protobuf_request(spans), PROTOBUF)
    await read_waiting_traces(pool)
    trace_id = spans[0].trace_id
    dataset = await create_dataset(client)
    unknown = await client.post(
        f"/api/v1/traces/{trace_id}/test-case", json={"dataset_id": "not-a-uuid"}
    )
    assert unknown.status_code == 404
    assert unknown.json()["errors"][0]["pointer"] == "/dataset_id"
    bad_check = await client.post(
        f"/api/v1/traces/{trace_id}/test-case",
        json={"dataset_id": dataset["id"], "checks": [{"type": "tool_called"}]},
    )
    assert bad_check.status_code == 422
    assert bad_check.json()["errors"][0]["pointer"].startswith("/checks/0")

    other_key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other_key}) as other:
        assert (await other.get(f"/api/v1/traces/{trace_id}")).status_code == 404
        theirs = await create_dataset(other)
        stolen = await other.post(
            f"/api/v1/traces/{trace_id}/test-case", json={"dataset_id": theirs["id"]}
        )
        assert stolen.status_code == 404
        assert (await other.get("/api/v1/traces")).json()["items"] == []
    mine_into_theirs = await client.post(
        f"/api/v1/traces/{trace_id}/test-case", json={"dataset_id": theirs["id"]}
    )
    assert mine_into_theirs.status_code == 404


async def test_traces_past_the_project_retention_are_deleted_with_their_spans(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    old, recent = refund_conversation(), refund_conversation()
    for spans in (old, recent):
        await export(client, protobuf_request(spans), PROTOBUF)
    await read_waiting_traces(pool)
    settings = await client.put("/api/v1/trace-settings", json={"retention_days": 7})
    assert settings.json() == {"retention_days": 7}
    assert (await client.get("/api/v1/trace-settings")).json() == {"retention_days": 7}
    await pool.execute(
        "UPDATE traces SET received_at = now() - interval '8 days' WHERE trace_id = $1",
        old[0].trace_id,
    )

    await delete_expired_traces(pool)
    assert (await client.get(f"/api/v1/traces/{old[0].trace_id}")).status_code == 404
    assert (await trace_of(client, recent[0].trace_id))["span_count"] == 5
    left = await pool.fetchval(
        "SELECT count(*) FROM trace_spans WHERE trace_id = $1", old[0].trace_id
    )
    assert left == 0
    refused = await client.put("/api/v1/trace-settings", json={"retention_days": 0})
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["pointer"] == "/retention_days"


async def test_a_batch_that_cannot_be_read_is_dropped_and_the_rest_are_read(
    client: httpx.AsyncClient, pool: asyncpg.Pool, caplog: pytest.LogCaptureFixture
) -> None:
    project_id = await pool.fetchval(
        "SELECT project_id FROM api_keys WHERE key_hash = $1",
        hash_key(client.headers["x-api-key"]),
    )
    await pool.execute(
        "INSERT INTO trace_batches (project_id, encoding, gzipped, body, span_count)"
        " VALUES ($1, 'json', false, $2, 1)",
        project_id,
        json.dumps({"resourceSpans": "broken"}).encode(),
    )
    spans = refund_conversation()
    await export(client, protobuf_request(spans), PROTOBUF)
    await read_waiting_traces(pool)
    assert (await trace_of(client, spans[0].trace_id))["span_count"] == 5
    assert await pool.fetchval("SELECT count(*) FROM trace_batches") == 0
    assert "dropped trace batch" in caplog.text


def openinference_conversation() -> list[SpanSpec]:
    """An agent turn as OpenInference (Arize Phoenix) instruments it."""
    trace_id = new_trace_id()
    root, llm1, tool, llm2 = (new_span_id() for _ in range(4))
    question = "Do I need a coat in Oslo today?"
    return [
        SpanSpec(trace_id, root, "weather agent", 0, 500, attributes={
            "openinference.span.kind": "AGENT", "input.value": question,
            "output.value": "Yes: it is 3 degrees in Oslo."}),
        SpanSpec(trace_id, llm1, "ChatCompletion", 10, 100, root, attributes={
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-5",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": question,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "t1",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "weather.lookup",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments":
                '{"city": "Oslo"}',
            "llm.token_count.prompt": 50, "llm.token_count.completion": 12}),
        SpanSpec(trace_id, tool, "weather.lookup", 110, 200, root, attributes={
            "openinference.span.kind": "TOOL", "tool.name": "weather.lookup",
            "input.value": '{"city": "Oslo"}', "input.mime_type": "application/json",
            "output.value": '{"celsius": 3}'}),
        SpanSpec(trace_id, llm2, "ChatCompletion", 210, 490, root, attributes={
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-5",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Yes: it is 3 degrees in Oslo.",
            "llm.token_count.prompt": 80, "llm.token_count.completion": 9}),
    ]  # fmt: skip


def indexed_genai_conversation() -> list[SpanSpec]:
    """An agent turn in the older indexed `gen_ai.prompt.N` form (OpenLLMetry/Traceloop)."""
    trace_id = new_trace_id()
    llm1, tool, llm2 = (new_span_id() for _ in range(3))
    question = "Book me a table for two on Friday."
    return [
        SpanSpec(trace_id, llm1, "anthropic.chat", 0, 100, attributes={
            "llm.request.type": "chat", "gen_ai.request.model": "claude-sonnet-5-5",
            "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You book tables.",
            "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": question,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.id": "b1",
            "gen_ai.completion.0.tool_calls.0.name": "tables.book",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"day": "Friday", "people": 2}',
            "gen_ai.usage.prompt_tokens": 70, "gen_ai.usage.completion_tokens": 15}),
        SpanSpec(trace_id, tool, "tables.book.tool", 110, 150, attributes={
            "traceloop.span.kind": "tool", "traceloop.entity.name": "tables.book",
            "traceloop.entity.input": '{"day": "Friday", "people": 2}',
            "traceloop.entity.output": '{"booked": true}'}),
        SpanSpec(trace_id, llm2, "anthropic.chat", 160, 300, attributes={
            "llm.request.type": "chat", "gen_ai.request.model": "claude-sonnet-5-5",
            "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": question,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Booked: a table for two on Friday.",
            "gen_ai.usage.prompt_tokens": 90, "gen_ai.usage.completion_tokens": 10}),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("conversation", "question", "reply", "tool", "arguments", "tokens"),
    [
        (openinference_conversation, "Do I need a coat in Oslo today?",
         "Yes: it is 3 degrees in Oslo.", "weather.lookup", {"city": "Oslo"}, (130, 21)),
        (indexed_genai_conversation, "Book me a table for two on Friday.",
         "Booked: a table for two on Friday.", "tables.book", {"day": "Friday", "people": 2},
         (160, 25)),
    ],
)  # fmt: skip
async def test_the_other_two_dialects_read_into_the_same_shape(
    client: httpx.AsyncClient,
    pool: asyncpg.Pool,
    conversation: Any,
    question: str,
    reply: str,
    tool: str,
    arguments: dict[str, Any],
    tokens: tuple[int, int],
) -> None:
    spans = conversation()
    assert (await export(client, json_request(spans), JSON)).status_code == 200
    await read_waiting_traces(pool)
    trace = await trace_of(client, spans[0].trace_id)
    assert trace["input"] == question
    assert trace["output"] == reply
    assert [call["name"] for call in trace["tool_calls"]] == [tool]
    assert trace["tool_calls"][0]["arguments"] == arguments
    assert trace["usage"] == {"input_tokens": tokens[0], "output_tokens": tokens[1]}


async def test_a_project_flooding_the_inbox_does_not_hold_back_another_projects_traces(
    client: httpx.AsyncClient, base_url: str, database_url: str, pool: asyncpg.Pool
) -> None:
    await read_waiting_traces(pool)  # an empty inbox to start from
    for _ in range(3 * BATCHES_PER_PASS):
        await export(client, protobuf_request(refund_conversation()), PROTOBUF)
    other_key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other_key}) as other:
        late = refund_conversation()
        await export(other, protobuf_request(late), PROTOBUF)
        assert await read_some(pool, BATCHES_PER_PASS) == BATCHES_PER_PASS
        first_pass = await other.get(f"/api/v1/traces/{late[0].trace_id}")
    assert first_pass.status_code == 200, "read in the first pass, ahead of the flood"
    assert await pool.fetchval("SELECT count(*) FROM trace_batches") == 2 * BATCHES_PER_PASS + 1


async def test_a_request_the_worker_could_not_read_is_refused_at_once(
    client: httpx.AsyncClient,
) -> None:
    spans = refund_conversation()
    body = json.loads(json_request(spans))
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] = 5
    response = await export(client, json.dumps(body).encode(), JSON)
    assert response.status_code == 400, response.text
    assert "spans[0].name" in response.json()["detail"]


async def test_span_kinds_and_status_codes_otlp_does_not_define_are_read_as_unset(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    spans = refund_conversation()
    body = json.loads(json_request(spans))
    first = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    first["kind"], first["status"] = 70_000, {"code": 99_999, "message": "odd"}
    assert (await export(client, json.dumps(body).encode(), JSON)).status_code == 200
    await read_waiting_traces(pool)
    stored = await trace_of(client, spans[0].trace_id)
    assert stored["span_count"] == 5
    root = next(span for span in stored["spans"] if span["span_id"] == spans[0].span_id)
    assert root["status_code"] == "unset"


async def test_a_batch_that_fails_to_store_costs_no_other_batch_its_attempts(
    client: httpx.AsyncClient, base_url: str, database_url: str, pool: asyncpg.Pool
) -> None:
    await read_waiting_traces(pool)
    # A database that refuses one span, as a constraint or a full disk might.
    await pool.execute("""
        CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.name = 'poison' THEN RAISE EXCEPTION 'refused'; END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER refuse_poison BEFORE INSERT ON trace_spans
            FOR EACH ROW EXECUTE FUNCTION refuse_poison();
    """)
    try:
        poison = [SpanSpec(new_trace_id(), new_span_id(), "poison", 0, 1)]
        await export(client, protobuf_request(poison), PROTOBUF)
        other_key = await new_project_key(database_url)
        async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other_key}) as b:
            good = refund_conversation()
            await export(b, protobuf_request(good), PROTOBUF)
            await read_some(pool, BATCHES_PER_PASS)
            assert (await b.get(f"/api/v1/traces/{good[0].trace_id}")).status_code == 200
        attempts = await pool.fetchval("SELECT failed_attempts FROM trace_batches")
        assert attempts == 1
        await read_waiting_traces(pool)  # retried until dropped
        assert await pool.fetchval("SELECT count(*) FROM trace_batches") == 0
    finally:
        await pool.execute(
            "DROP TRIGGER refuse_poison ON trace_spans; DROP FUNCTION refuse_poison()"
        )


async def test_the_time_range_takes_rfc_3339_times_only(client: httpx.AsyncClient) -> None:
    fine = await client.get("/api/v1/traces", params={"started_after": "2026-12-01T10:00:00Z"})
    assert fine.status_code == 200, fine.text
    for bad in ("0.5", "yesterday", "2026-13-01"):
        refused = await client.get("/api/v1/traces", params={"started_before": bad})
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["errors"][0]["parameter"] == "started_before"


async def test_a_filter_finds_old_matches_beyond_the_newest_traces_it_looks_through_first(
    client: httpx.AsyncClient, pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trace_lists, "RECENT_WINDOW", 1)  # a window of limit + 2 traces
    conversations = []
    for index in range(7):
        spans = refund_conversation()
        for spec in spans:
            spec.start_ms += index * 10_000
        if index == 0:  # only the oldest never calls stripe.refund
            spans = [s for s in spans if "execute_tool" not in s.name]
        conversations.append(spans)
        await export(client, protobuf_request(spans), PROTOBUF)
    await read_waiting_traces(pool)
    ids = [spans[0].trace_id for spans in conversations]
    since = {"started_after": "2026-12-01T09:00:00Z"}

    async def listed(**params: Any) -> dict[str, Any]:
        response = await client.get("/api/v1/traces", params={**since, **params})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    everything = await listed(q="refund order 1234", limit=100)
    assert [t["trace_id"] for t in everything["items"]][-7:] == ids[::-1]
    with_tool = await listed(tool="stripe.refund", limit=2)
    assert [t["trace_id"] for t in with_tool["items"]] == [ids[6], ids[5]]
    oldest = openinference_conversation()
    for spec in oldest:
        spec.start_ms -= 60_000
    await export(client, json_request(oldest), JSON)
    await read_waiting_traces(pool)
    beyond = await listed(q="coat in Oslo", limit=2)
    assert [t["trace_id"] for t in beyond["items"]] == [oldest[0].trace_id]
    assert (await listed(q="words in no trace", limit=2))["items"] == []
    pages, cursor = [], None
    while True:
        page = await listed(tool="stripe.refund", limit=2, **({"cursor": cursor} if cursor else {}))
        pages += [t["trace_id"] for t in page["items"]]
        if not (cursor := page["next_cursor"]):
            break
    assert pages == ids[:0:-1], "every match, newest first, across pages"
    assert ids[0] not in pages


def _json_with_attribute(value_json: bytes, attributes: int = 1) -> bytes:
    """An OTLP/JSON request of one span whose attributes (a, a1, ...) each hold `value_json`."""
    pairs = b",".join(b'{"key":"a%d","value":%s}' % (n, value_json) for n in range(attributes))
    span = b'{"traceId":"%s","spanId":"%s","name":"s","attributes":[%s]}' % (
        new_trace_id().encode(), new_span_id().encode(), pairs
    )  # fmt: skip
    return b'{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}' % span


def _json_array(count: int) -> bytes:
    return b'{"arrayValue":{"values":[%s]}}' % b",".join([b"{}"] * count)


def _json_nested(depth: int) -> bytes:
    return b'{"arrayValue":{"values":[' * depth + b"{}" + b"]}}" * depth


def _proto_with_attribute(value: AnyValue | bytes, attributes: int = 1) -> bytes:
    """A protobuf request of one span whose attributes (a0, a1, ...) each hold `value`."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id = bytes.fromhex(new_trace_id()), bytes.fromhex(new_span_id())
    written = value if isinstance(value, bytes) else value.SerializeToString()
    pairs = b""
    for n in range(attributes):
        key = f"a{n}".encode()
        pair = b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(len(written)) + written
        pairs += b"\x4a" + _varint(len(pair)) + pair  # Span.attributes
    span_bytes = span.SerializeToString() + pairs
    scope = b"\x12" + _varint(len(span_bytes)) + span_bytes  # ScopeSpans.spans
    resource = b"\x12" + _varint(len(scope)) + scope  # ResourceSpans.scope_spans
    return b"\x0a" + _varint(len(resource)) + resource  # ExportTraceServiceRequest


def _proto_array(count: int) -> AnyValue:
    value = AnyValue()
    value.array_value.values.extend([AnyValue()] * count)
    return value


def _proto_nested(depth: int) -> bytes:
    """An array in an array ..., written on the wire: protobuf itself refuses to build one
    nested past 100 messages."""
    value = AnyValue(string_value="bottom").SerializeToString()
    for _ in range(depth):
        array = b"\x0a" + _varint(len(value)) + value  # ArrayValue.values
        value = b"\x2a" + _varint(len(array)) + array  # AnyValue.array_value
    return value


def _varint(number: int) -> bytes:
    written = b""
    while number >= 0x80:
        written += bytes([number & 0x7F | 0x80])
        number >>= 7
    return written + bytes([number])


@pytest.mark.parametrize(
    ("write", "headers", "status", "says"),
    [
        # 2 million empty values in one attribute: 6 MB, 13 KB gzipped.
        (lambda: _json_with_attribute(_json_array(2_000_000)), JSON, 413,
         "_MAX_VALUES_PER_REQUEST"),
        # 101 attributes of 1,000 empty values each: 202 KB.
        (lambda: _proto_with_attribute(_proto_array(1_000), 101), PROTOBUF, 413,
         "_MAX_VALUES_PER_REQUEST"),
        (lambda: _json_with_attribute(_json_array(10_000)), JSON, 413,
         "_MAX_VALUES_PER_ATTRIBUTE"),
        (lambda: _proto_with_attribute(_proto_array(10_000)), PROTOBUF, 413,
         "_MAX_VALUES_PER_ATTRIBUTE"),
        (lambda: _json_with_attribute(b'{"intValue":1}', 129), JSON, 413,
         "_MAX_ATTRIBUTES_PER_SPAN"),
        (lambda: _proto_with_attribute(AnyValue(int_value=1), 129), PROTOBUF, 413,
         "_MAX_ATTRIBUTES_PER_SPAN"),
        (lambda: _json_with_attribute(_json_nested(17)), JSON, 400, "_MAX_VALUE_DEPTH"),
        (lambda: _proto_with_attribute(_proto_nested(17)), PROTOBUF, 400, "_MAX_VALUE_DEPTH"),
        # Past what the JSON parser itself can nest: once a 500, and exporters retry a 5xx.
        (lambda: _json_with_attribute(_json_nested(5_000)), JSON, 400, "nests too deeply"),
        (lambda: _proto_with_attribute(_proto_nested(60)), PROTOBUF, 400, "_MAX_VALUE_DEPTH"),
    ],
    ids=[
        "json-values", "proto-values", "json-attribute", "proto-attribute", "json-attributes",
        "proto-attributes", "json-depth", "proto-depth", "json-parser-depth", "proto-parser-depth",
    ],
)  # fmt: skip
async def test_a_request_whose_values_cost_more_than_its_bytes_is_refused_naming_the_limit(
    client: httpx.AsyncClient, write: Any, headers: dict[str, str], status: int, says: str
) -> None:
    gzipped = gzip.compress(write())
    response = await export(client, gzipped, {**headers, "content-encoding": "gzip"})
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"] == "application/problem+json"
    assert says in response.json()["detail"]


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
async def test_a_resource_counts_its_values_once_for_every_span_it_is_kept_with(
    client: httpx.AsyncClient, encoding: str
) -> None:
    trace_id = new_trace_id()
    spans = [SpanSpec(trace_id, new_span_id(), "s", 0, 1) for _ in range(1_001)]
    body = (json_request if encoding == "json" else protobuf_request)(spans)
    fine = await export(client, body, JSON if encoding == "json" else PROTOBUF)
    assert fine.status_code == 200, fine.text
    # 100 resource attributes kept with each of 1,001 spans: 100,100 values to store.
    wide = _with_resource_attributes(body, encoding, 100)
    response = await export(client, wide, JSON if encoding == "json" else PROTOBUF)
    assert response.status_code == 413, response.text[:500]
    assert "_MAX_VALUES_PER_REQUEST" in response.json()["detail"]


def _with_resource_attributes(body: bytes, encoding: str, count: int) -> bytes:
    if encoding == "json":
        request = json.loads(body)
        request["resourceSpans"][0]["resource"]["attributes"] = [
            {"key": f"r{n}", "value": {"intValue": n}} for n in range(count)
        ]
        return json.dumps(request).encode()
    proto = ExportTraceServiceRequest.FromString(body)
    for n in range(count):
        proto.resource_spans[0].resource.attributes.add(key=f"r{n}").value.int_value = n
    return proto.SerializeToString()


async def test_a_json_request_has_a_lower_decompressed_limit_than_protobuf(
    client: httpx.AsyncClient,
) -> None:
    # A gzip bomb: 11 million empty values, 33 MB of JSON, 32 KB gzipped.
    bomb = gzip.compress(_json_with_attribute(_json_array(11_000_000)))
    assert len(bomb) < 64 * 1024
    response = await export(client, bomb, {**JSON, "content-encoding": "gzip"})
    assert response.status_code == 413, response.text[:500]
    assert "AGENTLASSO_TRACE_MAX_JSON_BODY_BYTES" in response.json()["detail"]


def _tool_heavy_conversation(tool_calls: int, text_chars: int) -> list[SpanSpec]:
    """An agent span whose input is `text_chars` long, and `tool_calls` tool spans whose
    arguments are as long."""
    trace_id, root = new_trace_id(), new_span_id()
    spans = [
        SpanSpec(trace_id, root, "invoke_agent bulky", 0, 10_000, attributes={
            "openinference.span.kind": "AGENT", "input.value": "q" * text_chars}),
    ]  # fmt: skip
    spans += [
        SpanSpec(trace_id, new_span_id(), f"tool {n}", 1 + n, 2 + n, root, attributes={
            "openinference.span.kind": "TOOL", "tool.name": f"tool.{n}",
            "input.value": "a" * text_chars})
        for n in range(tool_calls)
    ]  # fmt: skip
    return spans


async def test_a_stored_summary_is_cut_to_its_limits_saying_what_was_cut(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    spans = _tool_heavy_conversation(tool_calls=150, text_chars=30_000)
    assert (await export(client, protobuf_request(spans), PROTOBUF)).status_code == 200
    await read_waiting_traces(pool)
    trace = await trace_of(client, spans[0].trace_id)
    assert len(trace["input"]) == 10_000 + len("… (cut at 10,000 characters)")
    assert trace["input"].endswith("… (cut at 10,000 characters)")
    assert len(trace["tool_calls"]) == 100
    assert trace["tool_calls"][0]["arguments"].endswith("… (cut at 10,000 characters)")
    assert "the input cut at 10,000 of 30,000 characters" in trace["cuts"]
    assert "the first 100 of 150 tool calls kept" in trace["cuts"]
    assert trace["span_count"] == 151  # the spans themselves are all kept
    listed = (await client.get("/api/v1/traces")).json()["items"][0]
    assert listed["cuts"] == trace["cuts"]


async def test_a_list_answer_stops_before_its_byte_budget_and_pages_on(
    client: httpx.AsyncClient, pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversations = []
    for index in range(4):
        spans = _tool_heavy_conversation(tool_calls=10, text_chars=9_000)
        for spec in spans:
            spec.start_ms += index * 100_000
        conversations.append(spans)
        await export(client, protobuf_request(spans), PROTOBUF)
    await read_waiting_traces(pool)
    one_trace = len((await client.get("/api/v1/traces", params={"limit": 1})).content)
    monkeypatch.setattr(trace_lists, "PAGE_BYTES", 2 * one_trace)

    seen: list[str] = []
    cursor = None
    for _ in range(4):
        params: dict[str, Any] = {"limit": 50, **({"cursor": cursor} if cursor else {})}
        response = await client.get("/api/v1/traces", params=params)
        assert len(response.content) < 3 * one_trace, "a page stops at its byte budget"
        page = response.json()
        seen += [trace["trace_id"] for trace in page["items"]]
        if not (cursor := page["next_cursor"]):
            break
    assert seen == [spans[0].trace_id for spans in conversations[::-1]]


async def test_a_later_span_is_summed_in_without_reading_the_stored_spans_again(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    spans = refund_conversation()
    trace_id = spans[0].trace_id
    await export(client, protobuf_request(spans[:4]), PROTOBUF)
    await read_waiting_traces(pool)
    # Were the stored spans read back, the summary would now tell of this name and this reply.
    await pool.execute(
        "UPDATE trace_spans SET name = 'renamed in the database', attributes = '{}'::jsonb"
        " WHERE trace_id = $1",
        trace_id,
    )
    await export(client, protobuf_request(spans[4:]), PROTOBUF)
    await read_waiting_traces(pool)
    trace = await trace_of(client, trace_id)
    assert trace["name"] == "invoke_agent support-bot"
    assert trace["span_count"] == 5
    assert trace["output"] == REPLY  # from the span that came last
    assert [call["name"] for call in trace["tool_calls"]] == ["orders.lookup", "stripe.refund"]
    assert trace["usage"] == {"input_tokens": 420, "output_tokens": 70}


async def test_a_pass_takes_no_more_batches_than_fit_in_its_byte_budget(
    client: httpx.AsyncClient, pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    await read_waiting_traces(pool)
    body = protobuf_request(refund_conversation())
    for _ in range(3):
        await export(client, body, PROTOBUF)
    monkeypatch.setattr(trace_reading, "PASS_BYTES", 2 * len(body))
    assert await read_some(pool, BATCHES_PER_PASS) == 2, "the third waits for the next pass"
    assert await read_some(pool, BATCHES_PER_PASS) == 1


async def test_a_span_is_stored_with_each_long_value_cut_and_its_summary_read_whole(
    client: httpx.AsyncClient, pool: asyncpg.Pool
) -> None:
    spans = refund_conversation()
    long_question = "Please refund order 1234. " + "It arrived broken. " * 1_000
    for spec in spans:
        if "gen_ai.input.messages" in spec.attributes:
            spec.attributes["gen_ai.input.messages"] = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": long_question}]}]
            )
    spans[0].attributes["app.payload"] = "x" * 5_000_000
    await export(client, protobuf_request(spans), PROTOBUF)
    await read_waiting_traces(pool)
    stored = await pool.fetchval(
        "SELECT max(length(attributes::text)) FROM trace_spans WHERE trace_id = $1",
        spans[0].trace_id,
    )
    assert stored < 11_000, "5 MB is not stored to be cut on every read"
    trace = await trace_of(client, spans[0].trace_id)
    # The summary was read from the whole span: the question's text, cut only by the summary.
    assert trace["input"].startswith("Please refund order 1234. It arrived broken.")
    assert trace["input"].endswith("… (cut at 10,000 characters)")
    assert "the input cut at 10,000 of 19,026 characters" in trace["cuts"]
