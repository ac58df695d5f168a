"""Registered agents: CRUD, headers sealed at rest, the address guard, and a free try."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import asyncpg
import httpx
import msgspec
import pytest

from agentlasso.agents.headers import seal_headers
from agentlasso.config import Settings
from agentlasso.secrets_box import MISSING_KEY, SecretKeyError, generate_key, parse_key
from agentlasso.server import create_app
from tests.support.api import register_agent
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key
from tests.support.fake_agent import FakeAgentServer, running_fake_agent

SECRET = "Bearer sk-live-do-not-leak-4242"
AGENT_REPLY = {
    "output": "Refunded order 1234.",
    "tool_calls": [{"name": "stripe.refund", "arguments": {"order": 1234}}],
}


async def create_agent(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    """Register an agent through the API and return it."""
    body = {"name": "support bot", "url": "http://127.0.0.1:9/agent", **fields}
    response = await client.post("/api/v1/agents", json=body)
    assert response.status_code == 201, response.text
    agent: dict[str, Any] = response.json()
    return agent


async def stored_row(database_url: str, agent_id: str) -> tuple[bytes | None, str]:
    """The sealed headers of an agent's row, and the whole row as PostgreSQL prints it."""
    connection = await asyncpg.connect(database_url)
    try:
        row = await connection.fetchrow(
            "SELECT headers_encrypted, a::text AS whole FROM agents a WHERE id = $1::uuid",
            agent_id,
        )
    finally:
        await connection.close()
    assert row is not None
    return row["headers_encrypted"], row["whole"]


class RecordingAgent(ThreadingHTTPServer):
    """A fake agent on 127.0.0.1 that records each request's headers and JSON body."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _RecordingHandler)
        self.received: list[tuple[dict[str, str], dict[str, Any]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/agent"


class _RecordingHandler(BaseHTTPRequestHandler):
    server: RecordingAgent

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.received.append((headers, json.loads(self.rfile.read(length))))
        payload = json.dumps(AGENT_REPLY).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the recorded requests."""


@pytest.fixture
def recording_agent() -> Iterator[RecordingAgent]:
    server = RecordingAgent()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextlib.asynccontextmanager
async def app_client(settings: Settings, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of an app built from these settings, its lifespan running."""
    app = create_app(settings)
    async with (
        app.lifespan(),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),  # type: ignore[arg-type]
            base_url="http://agentlasso.test",
            headers={"x-api-key": api_key},
        ) as http,
    ):
        yield http


async def test_crud_round_trip_never_shows_header_values(client: httpx.AsyncClient) -> None:
    agent = await create_agent(
        client,
        headers={"Authorization": SECRET, "X-Tenant": "acme"},
        timeout_s=12.5,
        max_concurrency=4,
        system_prompt="You refund orders.",
        tools=[{"name": "stripe.refund", "input_schema": {"type": "object"}}],
    )
    assert agent["header_names"] == ["authorization", "x-tenant"]
    assert "headers" not in agent
    assert SECRET not in json.dumps(agent)
    assert agent["timeout_s"] == 12.5
    assert agent["max_concurrency"] == 4
    assert agent["system_prompt"] == "You refund orders."
    assert agent["tools"] == [{"name": "stripe.refund", "input_schema": {"type": "object"}}]

    read = await client.get(f"/api/v1/agents/{agent['id']}")
    assert read.status_code == 200
    assert read.json() == agent

    renamed = await client.patch(f"/api/v1/agents/{agent['id']}", json={"name": "refund bot"})
    assert renamed.status_code == 200, renamed.text
    unchanged = {key: value for key, value in agent.items() if key not in ("name", "updated_at")}
    assert {k: v for k, v in renamed.json().items() if k in unchanged} == unchanged
    assert renamed.json()["name"] == "refund bot"

    cleared = await client.patch(
        f"/api/v1/agents/{agent['id']}",
        json={"max_concurrency": None, "system_prompt": None, "tools": None, "timeout_s": 300},
    )
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["max_concurrency"] is None
    assert cleared.json()["system_prompt"] is None
    assert cleared.json()["tools"] is None
    assert cleared.json()["timeout_s"] == 300
    assert cleared.json()["header_names"] == ["authorization", "x-tenant"]

    deleted = await client.delete(f"/api/v1/agents/{agent['id']}")
    assert deleted.status_code == 204
    assert_problem(await client.get(f"/api/v1/agents/{agent['id']}"), 404)
    assert_problem(await client.delete(f"/api/v1/agents/{agent['id']}"), 404)


async def test_defaults(client: httpx.AsyncClient) -> None:
    agent = await create_agent(client)
    assert agent["timeout_s"] == 30
    assert agent["header_names"] == []
    assert agent["max_concurrency"] is None
    assert agent["system_prompt"] is None
    assert agent["tools"] is None


async def test_list_is_paginated_oldest_first(client: httpx.AsyncClient) -> None:
    created = [await create_agent(client, name=f"agent {n}") for n in range(3)]
    first = (await client.get("/api/v1/agents", params={"limit": 2})).json()
    assert [item["id"] for item in first["items"]] == [agent["id"] for agent in created[:2]]
    assert first["next_cursor"]
    second = await client.get("/api/v1/agents", params={"cursor": first["next_cursor"]})
    assert [item["id"] for item in second.json()["items"]] == [created[2]["id"]]
    assert second.json()["next_cursor"] is None
    assert all("headers" not in item for item in first["items"])


async def test_headers_are_sealed_at_rest_and_resealed_on_update(
    client: httpx.AsyncClient, database_url: str
) -> None:
    agent = await create_agent(client, headers={"authorization": SECRET})
    sealed, whole = await stored_row(database_url, agent["id"])
    assert sealed is not None
    assert SECRET.encode() not in sealed
    assert b"sk-live" not in sealed
    assert "sk-live" not in whole

    await client.patch(f"/api/v1/agents/{agent['id']}", json={"name": "kept headers"})
    assert (await stored_row(database_url, agent["id"]))[0] == sealed

    replaced = await client.patch(
        f"/api/v1/agents/{agent['id']}", json={"headers": {"X-Api-Key": "second-secret-77"}}
    )
    assert replaced.json()["header_names"] == ["x-api-key"]
    resealed, whole = await stored_row(database_url, agent["id"])
    assert resealed is not None and resealed != sealed
    assert b"second-secret-77" not in resealed and "second-secret-77" not in whole

    removed = await client.patch(f"/api/v1/agents/{agent['id']}", json={"headers": None})
    assert removed.json()["header_names"] == []
    assert (await stored_row(database_url, agent["id"]))[0] is None


async def test_another_projects_agent_is_404_on_every_route(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient, database_url: str
) -> None:
    agent = await create_agent(client, headers={"authorization": SECRET})
    other = {"x-api-key": await new_project_key(database_url)}
    for method, url, body in [
        ("GET", f"/api/v1/agents/{agent['id']}", None),
        ("PATCH", f"/api/v1/agents/{agent['id']}", {"name": "mine now"}),
        ("DELETE", f"/api/v1/agents/{agent['id']}", None),
        ("POST", f"/api/v1/agents/{agent['id']}/invoke", {"input": "hi"}),
    ]:
        assert_problem(await anonymous.request(method, url, headers=other, json=body), 404)
    assert (await anonymous.get("/api/v1/agents", headers=other)).json()["items"] == []
    assert (await client.get(f"/api/v1/agents/{agent['id']}")).json() == agent


async def test_bad_input_is_422_naming_the_field(client: httpx.AsyncClient) -> None:
    agent = await create_agent(client)
    good = {"name": "bot", "url": "http://127.0.0.1:9/agent"}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "bot"}, "/url"),
        ({"url": "http://127.0.0.1:9/"}, "/name"),
        ({**good, "url": "ftp://127.0.0.1/agent"}, "/url"),
        ({**good, "url": "file:///etc/passwd"}, "/url"),
        ({**good, "url": "not a url"}, "/url"),
        ({**good, "url": "http://"}, "/url"),
        ({**good, "url": "http://127.0.0.1:port/"}, "/url"),
        ({**good, "url": 5}, "/url"),
        ({**good, "timeout_s": 0}, "/timeout_s"),
        ({**good, "timeout_s": 301}, "/timeout_s"),
        ({**good, "timeout_s": "thirty"}, "/timeout_s"),
        ({**good, "max_concurrency": 0}, "/max_concurrency"),
        ({**good, "max_concurrency": 10_001}, "/max_concurrency"),
        ({**good, "max_concurrency": 2.5}, "/max_concurrency"),
        ({**good, "headers": {"authorization": 5}}, "/headers"),
        ({**good, "headers": ["authorization"]}, "/headers"),
        ({**good, "headers": {"bad name": "x"}}, "/headers/bad name"),
        ({**good, "headers": {"x-ok": "line\r\nInjected: 1"}}, "/headers/x-ok"),
        ({**good, "headers": {"Host": "internal"}}, "/headers/Host"),
        ({**good, "headers": {"a": "1", "A": "2"}}, "/headers/A"),
        ({**good, "tools": {"name": "x"}}, "/tools"),
        ({**good, "tools": ["x"]}, "/tools/0"),
        ({**good, "nmae": "typo"}, "/nmae"),
    ]
    for body, pointer in cases:
        response = await client.post("/api/v1/agents", json=body)
        assert_problem(response, 422, pointer=pointer)
        assert SECRET not in response.text
    patches: list[tuple[dict[str, Any], str]] = [
        ({"url": "gopher://127.0.0.1/"}, "/url"),
        ({"url": None}, "/url"),
        ({"timeout_s": 1000}, "/timeout_s"),
        ({"name": None}, "/name"),
        ({"headers": {"k": 1}}, "/headers"),
        ({"header_names": ["x"]}, "/header_names"),
    ]
    for body, pointer in patches:
        response = await client.patch(f"/api/v1/agents/{agent['id']}", json=body)
        assert_problem(response, 422, pointer=pointer)
    both = await client.post(
        "/api/v1/agents", json={**good, "url": "ftp://x/", "headers": {"Content-Length": "1"}}
    )
    assert_problem(both, 422, pointer="/url")
    assert_problem(both, 422, pointer="/headers/Content-Length")
    invoke = f"/api/v1/agents/{agent['id']}/invoke"
    assert_problem(await client.post(invoke, json={}), 422, pointer="/input")
    assert_problem(
        await client.post(invoke, json={"input": "x", "context": 3}), 422, pointer="/context"
    )
    assert_problem(
        await client.post(invoke, json={"input": "x", "trial": 2}), 422, pointer="/trial"
    )
    assert (await client.get("/api/v1/agents")).json()["items"] == [agent], "nothing else stored"


async def test_the_address_guard_refuses_internal_urls_at_registration(
    settings: Settings, api_key: str
) -> None:
    guarded = msgspec.structs.replace(settings, allow_private_agents=False)
    internal = [
        "http://10.1.2.3/agent",
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:8080/agent",
    ]
    async with app_client(guarded, api_key) as http:
        for url in internal:
            response = await http.post("/api/v1/agents", json={"name": "x", "url": url})
            assert_problem(response, 422, pointer="/url")
        assert (await http.get("/api/v1/agents")).json()["items"] == []


async def test_the_address_guard_applies_when_patch_changes_the_url(
    client: httpx.AsyncClient, settings: Settings, api_key: str
) -> None:
    agent = await create_agent(client, url="http://127.0.0.1:9/agent")
    guarded = msgspec.structs.replace(settings, allow_private_agents=False)
    async with app_client(guarded, api_key) as http:
        response = await http.patch(
            f"/api/v1/agents/{agent['id']}", json={"url": "http://169.254.169.254/"}
        )
        assert_problem(response, 422, pointer="/url")
        # a change that leaves the url alone is not re-checked
        renamed = await http.patch(f"/api/v1/agents/{agent['id']}", json={"name": "renamed"})
        assert renamed.status_code == 200, renamed.text
    assert (await client.get(f"/api/v1/agents/{agent['id']}")).json()["url"] == agent["url"]


async def test_invoke_calls_the_agent_with_its_headers(
    client: httpx.AsyncClient, recording_agent: RecordingAgent
) -> None:
    agent = await create_agent(client, url=recording_agent.url, headers={"Authorization": SECRET})
    response = await client.post(
        f"/api/v1/agents/{agent['id']}/invoke",
        json={"input": "refund order 1234", "context": {"region": "eu"}},
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["output"] == AGENT_REPLY["output"]
    assert [call["name"] for call in answer["tool_calls"]] == ["stripe.refund"]
    assert answer["error"] is None
    assert answer["attempts"] == 1
    assert answer["latency_ms"] >= 0
    [(headers, body)] = recording_agent.received
    assert headers["authorization"] == SECRET
    assert body == {
        "input": "refund order 1234",
        "source": "agentlasso-sandbox",
        "run_id": None,
        "trial": 1,
        "context": {"region": "eu"},
    }


async def test_invoke_with_structured_input_and_no_context(
    client: httpx.AsyncClient, recording_agent: RecordingAgent
) -> None:
    agent = await create_agent(client, url=recording_agent.url)
    response = await client.post(
        f"/api/v1/agents/{agent['id']}/invoke", json={"input": {"order": 1234}}
    )
    assert response.status_code == 200, response.text
    [(headers, body)] = recording_agent.received
    assert "authorization" not in headers
    assert body["input"] == {"order": 1234}
    assert body["context"] == {}


async def test_invoke_uses_headers_replaced_by_patch(
    client: httpx.AsyncClient, recording_agent: RecordingAgent
) -> None:
    agent = await create_agent(client, url=recording_agent.url, headers={"authorization": SECRET})
    await client.patch(f"/api/v1/agents/{agent['id']}", json={"headers": {"x-key": "rotated"}})
    response = await client.post(f"/api/v1/agents/{agent['id']}/invoke", json={"input": "hi"})
    assert response.status_code == 200, response.text
    [(headers, _body)] = recording_agent.received
    assert headers["x-key"] == "rotated"
    assert "authorization" not in headers


async def test_headers_sealed_under_another_key_are_never_sent(
    client: httpx.AsyncClient, settings: Settings, api_key: str, recording_agent: RecordingAgent
) -> None:
    agent = await create_agent(client, url=recording_agent.url, headers={"authorization": SECRET})
    rotated = msgspec.structs.replace(settings, secret_key=generate_key())
    async with app_client(rotated, api_key) as http:
        url = f"/api/v1/agents/{agent['id']}/invoke"
        problem = assert_problem(await http.post(url, json={"input": "hi"}), 409)
        assert "set them again with PATCH" in problem["detail"]
        assert recording_agent.received == []
        await http.patch(f"/api/v1/agents/{agent['id']}", json={"headers": {"x-key": "new"}})
        assert (await http.post(url, json={"input": "hi"})).status_code == 200
    [(headers, _body)] = recording_agent.received
    assert headers["x-key"] == "new"


async def test_invoke_of_a_dead_agent_is_a_200_carrying_the_error(
    client: httpx.AsyncClient,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_port = sock.getsockname()[1]
    agent = await create_agent(client, url=f"http://127.0.0.1:{dead_port}/agent", timeout_s=5)
    response = await client.post(f"/api/v1/agents/{agent['id']}/invoke", json={"input": "hi"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["error"]
    assert answer["attempts"] >= 1
    assert "output" not in answer
    assert "tool_calls" not in answer


async def test_startup_without_a_secret_key_fails_with_the_remedy(settings: Settings) -> None:
    missing = msgspec.structs.replace(settings, secret_key=None)
    raised: list[Exception] = []
    try:
        async with create_app(missing).lifespan():
            pytest.fail("the API started without a secret key")
    except* SecretKeyError as group:  # Litestar's lifespan may wrap it in an exception group
        raised.extend(group.exceptions)
    assert [str(error) for error in raised] == [MISSING_KEY]
    assert "AGENTLASSO_SECRET_KEY is not set" in MISSING_KEY
    assert "agentlasso secret-key" in MISSING_KEY


@pytest.mark.parametrize("value", [" Bearer secret-4242", "Bearer secret-4242 ", "\tsecret-4242"])
async def test_header_values_h11_would_refuse_are_refused_at_registration(
    client: httpx.AsyncClient, value: str
) -> None:
    response = await client.post(
        "/api/v1/agents",
        json={"name": "bot", "url": "http://127.0.0.1:9/a", "headers": {"authorization": value}},
    )
    body = assert_problem(response, 422, pointer="/headers/authorization")
    assert "secret-4242" not in response.text, body


async def test_a_stored_header_h11_refuses_never_shows_its_value(
    client: httpx.AsyncClient, settings: Settings, database_url: str
) -> None:
    # An agent registered before validation matched h11: the value is stored, and refused
    # by the HTTP library on every call. Its error text quoted the whole value.
    with running_fake_agent() as agent:
        agent_id = await register_agent(client, agent.url)
        sealed = seal_headers(
            parse_key(settings.secret_key or ""), uuid.UUID(agent_id), {"x-token": " sk-4242 "}
        )
        connection = await asyncpg.connect(database_url)
        try:
            await connection.execute(
                "UPDATE agents SET headers_encrypted = $2 WHERE id = $1",
                uuid.UUID(agent_id),
                sealed,
            )
        finally:
            await connection.close()
        answer = await client.post(f"/api/v1/agents/{agent_id}/invoke", json={"input": "hi"})
    assert answer.status_code == 200
    assert answer.json()["error"].startswith("the request to the agent cannot be sent")
    assert "sk-4242" not in answer.text


@pytest.fixture
def fake_agent_pair() -> Any:
    with running_fake_agent() as first, running_fake_agent() as second:
        yield first, second


async def test_moving_the_url_to_another_origin_needs_the_headers_again(
    client: httpx.AsyncClient, fake_agent_pair: tuple[FakeAgentServer, FakeAgentServer]
) -> None:
    mine, attackers = fake_agent_pair
    agent_id = await register_agent(client, mine.url)  # with an Authorization header
    moved = await client.patch(f"/api/v1/agents/{agent_id}", json={"url": attackers.url})
    assert_problem(moved, 422, pointer="/headers")
    # Same origin, another path: the headers stay.
    same_origin = mine.url.replace("/agent", "/v2/agent")
    assert (
        await client.patch(f"/api/v1/agents/{agent_id}", json={"url": same_origin})
    ).status_code == 200
    # With the headers given again (or dropped), the move is accepted.
    dropped = await client.patch(
        f"/api/v1/agents/{agent_id}", json={"url": attackers.url, "headers": None}
    )
    assert dropped.status_code == 200 and dropped.json()["header_names"] == []
    await client.post(f"/api/v1/agents/{agent_id}/invoke", json={"input": "hi"})
    assert all("authorization" not in seen for seen in attackers.headers_seen)
