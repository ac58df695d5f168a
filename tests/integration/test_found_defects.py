"""The defects a hardening review found, each reproduced as it was first seen, then the fix.

Numbers follow the review's list (issue 9): 1 hostile regular expressions, 2 slow clients
exhausting the database pool, 3 a header value leaking, 5 a NUL in a reply, 6 deleting a
dataset that has runs, 7 odd numbers and text, 8 write-only headers read back by moving the
URL, 10 unbounded responses, 11 a global judge cache, 12 the rest of the hardening.
"""

from __future__ import annotations

import asyncio
import base64
import os
import pickle
import shutil
import stat
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import msgspec
import pytest
from agentlasso.agents.headers import seal_headers
from agentlasso.config import Settings
from agentlasso.db.migrations import SQL_DIR, EditedMigration, apply_migrations
from agentlasso.devstack.bootstrap import write_private
from agentlasso.domain.runs import ChunkRef
from agentlasso.queue import QueueConnection, connect, deserialize, enqueue_lanes
from agentlasso.secrets_box import parse_key
from agentlasso.server import create_app
from agentlasso.services.transfer import split_lines
from litestar import Litestar

from tests.support.api import create_dataset, register_agent, start_run
from tests.support.assertions import assert_problem
from tests.support.databases import ServerUrls, drop_database, fresh_database
from tests.support.fake_agent import FakeAgentServer, running_fake_agent
from tests.support.servers import serving

NUL = "\x00"


async def case_in(client: httpx.AsyncClient, dataset_id: str, **fields: Any) -> dict[str, Any]:
    body = {"input": "where is my refund?", **fields}
    response = await client.post(f"/api/v1/datasets/{dataset_id}/test-cases", json=body)
    assert response.status_code == 201, response.text
    case: dict[str, Any] = response.json()
    return case


# --- 5. A NUL character in what an agent answers ------------------------------------------------


async def test_a_reply_holding_nul_is_stored_faithfully_and_graded(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    checks = [{"type": "output_contains", "value": "refund"}, {"type": "tool_called", "tool": "t"}]
    case = await case_in(client, dataset["id"], checks=checks)
    run = await start_run(client, dataset_id=dataset["id"])
    reply = f"your refund{NUL}is on its way"
    calls = [{"name": "t", "arguments": {f"k{NUL}": f"v{NUL}"}}]
    posted = await client.post(
        "/api/v1/eval-run-results",
        json={
            "run_id": run["run_id"],
            "results": [
                {"test_case_id": case["id"], "actual_output": reply, "actual_tool_calls": calls}
            ],
        },
    )
    # Before: PostgreSQL refused the NUL and the batch was a 500.
    assert posted.status_code == 200, posted.text
    assert posted.json()["results"][0]["pass_fail"] is True
    stored = (await client.get(f"/api/v1/eval-runs/{run['run_id']}/results")).json()["items"]
    assert stored[0]["actual_output"] == reply
    assert stored[0]["actual_tool_calls"] == calls


async def test_nul_in_an_agent_error_a_client_posts_is_refused_naming_it(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    case = await case_in(client, dataset["id"])
    run = await start_run(client, dataset_id=dataset["id"])
    posted = await client.post(
        "/api/v1/eval-run-results",
        json={
            "run_id": run["run_id"],
            "results": [{"test_case_id": case["id"], "agent_error": NUL}],
        },
    )
    assert_problem(posted, 422, pointer="/results/0/agent_error")


# --- 6. Deleting a dataset that has runs -----------------------------------------------------


async def test_a_dataset_with_a_finished_run_is_deleted_and_its_run_stays_readable(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    case = await case_in(client, dataset["id"], checks=[{"type": "output_contains", "value": "x"}])
    run = await start_run(client, dataset_id=dataset["id"])
    result = {"test_case_id": case["id"], "actual_output": "x"}
    await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": [result]}
    )

    # Before: a foreign key from the run's pinned cases made this a 500.
    deleted = await client.delete(f"/api/v1/datasets/{dataset['id']}")
    assert deleted.status_code == 204, deleted.text

    assert_problem(await client.get(f"/api/v1/datasets/{dataset['id']}"), 404)
    assert_problem(await client.get(f"/api/v1/test-cases/{case['id']}"), 404)
    listed = (await client.get("/api/v1/datasets")).json()["items"]
    assert dataset["id"] not in [item["id"] for item in listed]
    kept = (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()
    assert kept["status"] == "completed" and kept["ci_pass"] is True
    results = (await client.get(f"/api/v1/eval-runs/{run['run_id']}/results")).json()["items"]
    assert [item["actual_output"] for item in results] == ["x"]
    again = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})
    assert_problem(again, 404, pointer="/dataset_id")


async def test_deleting_a_dataset_with_a_run_going_on_is_refused_naming_the_run(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    await case_in(client, dataset["id"])
    run = await start_run(client, dataset_id=dataset["id"])

    refused = assert_problem(await client.delete(f"/api/v1/datasets/{dataset['id']}"), 409)
    assert run["run_id"] in refused["detail"]
    assert (await client.get(f"/api/v1/datasets/{dataset['id']}")).status_code == 200

    await client.post(f"/api/v1/eval-runs/{run['run_id']}/cancel")
    assert (await client.delete(f"/api/v1/datasets/{dataset['id']}")).status_code == 204
    assert (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()["status"] == "cancelled"


# --- 7. Out-of-range numbers and odd text ------------------------------------------------------


async def test_a_checks_version_beyond_int32_is_a_422(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    url = f"/api/v1/datasets/{dataset['id']}/test-cases"
    created = await client.post(url, json={"input": "x", "checks_version": 2**31})
    assert_problem(created, 422, pointer="/checks_version")
    case = await case_in(client, dataset["id"])
    patched = await client.patch(f"/api/v1/test-cases/{case['id']}", json={"checks_version": 2**40})
    assert_problem(patched, 422, pointer="/checks_version")


@pytest.mark.parametrize(
    "cursor",
    [
        base64.urlsafe_b64encode(b"s99999999999999999999").decode().rstrip("="),
        base64.urlsafe_b64encode(b"s-5").decode().rstrip("="),
        base64.urlsafe_b64encode(b"s1e5").decode().rstrip("="),
    ],
)
async def test_a_cursor_out_of_range_is_a_422(client: httpx.AsyncClient, cursor: str) -> None:
    for url in ("/api/v1/datasets", "/api/v1/agents", "/api/v1/eval-runs"):
        assert_problem(await client.get(url, params={"cursor": cursor}), 422, parameter="cursor")


async def test_nul_in_anything_written_is_a_422_naming_the_field(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    case_url = f"/api/v1/datasets/{dataset['id']}/test-cases"
    refused: list[tuple[str, str, Any, str]] = [
        ("POST", "/api/v1/datasets", {"name": f"a{NUL}b"}, "/name"),
        ("POST", "/api/v1/datasets", {"name": "ok", "data_context": {"k": [f"v{NUL}"]}},
         "/data_context/k/0"),
        ("PATCH", f"/api/v1/datasets/{dataset['id']}", {"description": NUL}, "/description"),
        ("POST", case_url, {"input": {"q": NUL}}, "/input/q"),
        ("POST", case_url, {"input": "x", "checks": [{"type": "tool_called", "tool": NUL}]},
         "/checks/0/tool"),
        ("POST", case_url, {"input": "x", "expected_output": NUL}, "/expected_output"),
        ("POST", "/api/v1/agents", {"name": NUL, "url": "http://127.0.0.1:9/a"}, "/name"),
        ("POST", "/api/v1/eval-runs", {"dataset_id": dataset["id"], "labels": {"sha": NUL}},
         "/labels/sha"),
    ]  # fmt: skip
    for method, url, body, pointer in refused:
        response = await client.request(method, url, json=body)
        assert_problem(response, 422, pointer=pointer)
    imported = await client.post(
        f"{case_url}/import",
        content=msgspec.json.encode({"input": "ok"}) + b"\n" + msgspec.json.encode({"input": NUL}),
        headers={"content-type": "application/x-ndjson"},
    )
    body = assert_problem(imported, 422, pointer="/input")
    assert body["errors"][0]["line"] == 2


async def test_a_405_says_which_methods_are_allowed(client: httpx.AsyncClient) -> None:
    response = await client.put("/api/v1/datasets")
    assert_problem(response, 405)
    assert set(response.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


# --- 1. Hostile regular expressions ------------------------------------------------------------


async def test_a_hostile_preview_is_bounded_and_the_api_keeps_answering(
    client: httpx.AsyncClient,
) -> None:
    # Before: `\pL{300}x` over a 2 MB reply graded on the event loop for about 11 s, and a
    # case could carry any number of such patterns: one request stalled every tenant.
    checks = [
        {"type": "output_not_contains", "value": r"\pL{300}x", "regex": True},
        {"type": "output_not_contains", "value": r"(a|b)*a(a|b){1000}c", "regex": True},
        *(
            {"type": "output_not_contains", "value": rf"(?:a|b){{{n}}}c", "regex": True}
            for n in range(1, 60)
        ),
    ]
    body = {"input": "q", "checks": checks, "actual_output": "ab" * 1_000_000}

    async def health_while(task: asyncio.Task[httpx.Response]) -> int:
        answered = 0
        while not task.done():
            assert (await client.get("/health", timeout=5)).status_code == 200
            answered += 1
        return answered

    preview = asyncio.create_task(client.post("/api/v1/grading/preview", json=body))
    answered = await health_while(preview)
    response = await preview
    assert response.status_code == 200, response.text
    results = response.json()["result"]["check_results"]
    assert results[0]["status"] == "failed" and "at most 5,000" in results[0]["detail"]
    assert results[1]["status"] == "not_graded" and results[1]["detail"].startswith("Not run")
    assert answered >= 1, "the API answered while the preview was graded"


async def test_a_case_with_more_than_a_hundred_checks_is_refused(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    checks = [{"type": "output_contains", "value": f"v{n}"} for n in range(101)]
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "x", "checks": checks}
    )
    assert_problem(response, 422, pointer="/checks")


# --- 2. Slow clients and the database pool ----------------------------------------------------


@pytest.fixture
async def small_pool_api(settings: Settings, api_key: str) -> AsyncIterator[tuple[str, Litestar]]:
    """The API with a pool of two connections and a one-second wait for one."""
    app = create_app(
        msgspec.structs.replace(settings, db_pool_min=1, db_pool_max=2, db_acquire_timeout_s=1.0)
    )
    async with serving(app) as url:
        yield url, app


async def slow_upload(url: str, path: str, api_key: str) -> asyncio.StreamWriter:
    """Start an import that sends its headers and one line, then nothing more."""
    host, port = url.removeprefix("http://").split(":")
    _, writer = await asyncio.open_connection(host, int(port))
    head = (
        f"POST {path} HTTP/1.1\r\nhost: {host}\r\nx-api-key: {api_key}\r\n"
        "content-type: application/x-ndjson\r\ncontent-length: 100000000\r\n\r\n"
    )
    writer.write(head.encode() + b'{"input": "first of many"}\n')
    await writer.drain()
    return writer


async def test_slow_uploads_hold_no_connection_and_others_are_answered(
    small_pool_api: tuple[str, Litestar], api_key: str
) -> None:
    url, _ = small_pool_api
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": api_key}) as client:
        dataset = await create_dataset(client)
        path = f"/api/v1/datasets/{dataset['id']}/test-cases/import"
        # Before: each import took a connection and a transaction before its body arrived, so
        # two of these (ten against the default pool) hung every request, auth included.
        uploads = [await slow_upload(url, path, api_key) for _ in range(10)]
        try:
            await asyncio.sleep(0.5)  # every upload is in, holding whatever it holds
            for _ in range(5):
                answer = await client.get("/api/v1/datasets", timeout=5)
                assert answer.status_code == 200, answer.text
        finally:
            for writer in uploads:
                writer.close()


async def test_an_exhausted_pool_answers_503_with_retry_after(
    small_pool_api: tuple[str, Litestar], api_key: str
) -> None:
    url, app = small_pool_api
    pool = app.state.platform.pool
    held = [await pool.acquire(timeout=5), await pool.acquire(timeout=5)]
    try:
        async with httpx.AsyncClient(base_url=url, headers={"x-api-key": api_key}) as client:
            answer = await client.get("/api/v1/datasets", timeout=10)
    finally:
        for connection in held:
            await pool.release(connection)
    body = assert_problem(answer, 503)
    assert answer.headers["retry-after"] == "1" and "busy" in body["detail"]


async def test_an_export_read_slowly_holds_no_connection(
    small_pool_api: tuple[str, Litestar], api_key: str
) -> None:
    url, _ = small_pool_api
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": api_key}) as client:
        dataset = await create_dataset(client)
        lines = b"".join(
            msgspec.json.encode({"input": f"case {n} " + "x" * 2000}) + b"\n" for n in range(3000)
        )
        imported = await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases/import",
            content=lines,
            headers={"content-type": "application/x-ndjson"},
        )
        assert imported.status_code == 201, imported.text
        export = f"/api/v1/datasets/{dataset['id']}/test-cases/export"
        readers = []
        for _ in range(3):  # more stalled readers than the pool has connections
            stream = client.stream("GET", export)
            response = await stream.__aenter__()
            await anext(response.aiter_bytes())  # the first page, then nothing more
            readers.append(stream)
        try:
            answer = await client.get("/api/v1/datasets", timeout=5)
            assert answer.status_code == 200, answer.text
        finally:
            for stream in readers:
                await stream.__aexit__(None, None, None)


async def test_splitting_a_line_with_no_end_is_linear_and_exact() -> None:
    async def chunks(sizes: list[int]) -> AsyncIterator[bytes]:
        for size in sizes:
            yield b"a" * size

    # Before: the partial line was re-joined on every chunk (16 MB: 2 s, 32 MB: 7.5 s).
    [line] = [line async for line in split_lines(chunks([65536] * 512), 2**40)]
    assert len(line) == 65536 * 512
    body = [b"ab\ncd", b"", b"e\n", b"\nf"]

    async def pieces() -> AsyncIterator[bytes]:
        for piece in body:
            yield piece

    assert [line async for line in split_lines(pieces(), 100)] == [b"ab", b"cde", b"", b"f"]


# --- 3. A header value that h11 refuses, and what the error says ------------------------------


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


# --- 8. Write-only headers and a URL moved to another origin ----------------------------------


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


@pytest.fixture
def fake_agent_pair() -> Any:
    with running_fake_agent() as first, running_fake_agent() as second:
        yield first, second


# --- 10. Unbounded responses ------------------------------------------------------------------


async def test_a_ci_run_of_many_cases_lists_every_case_in_order(client: httpx.AsyncClient) -> None:
    # The list is streamed a page at a time instead of built whole in memory.
    dataset = await create_dataset(client, data_context={"region": "eu"})
    lines = b"".join(
        msgspec.json.encode({"input": f"case {n}", "description": f"d{n}"}) + b"\n"
        for n in range(1_203)
    )
    imported = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines,
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201
    created = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})
    assert created.status_code == 201
    run = created.json()
    assert run["total"] == 1_203 and run["status"] == "awaiting_results"
    assert [case["input"] for case in run["test_cases"]] == [f"case {n}" for n in range(1_203)]
    assert {case["data_context"]["region"] for case in run["test_cases"]} == {"eu"}


async def test_a_results_page_stops_before_eight_mebibytes(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    for n in range(12):
        await case_in(client, dataset["id"], description=str(n))
    created = (await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})).json()
    big = "x" * 1_000_000
    for case in created["test_cases"]:  # one at a time: each batch is under the body limit
        result = {"test_case_id": case["test_case_id"], "actual_output": big}
        posted = await client.post(
            "/api/v1/eval-run-results", json={"run_id": created["run_id"], "results": [result]}
        )
        assert posted.status_code == 200
    url = f"/api/v1/eval-runs/{created['run_id']}/results"
    first = await client.get(url, params={"limit": 50})
    assert len(first.content) <= 8 * 1024 * 1024
    page = first.json()
    assert 1 <= len(page["items"]) < 12 and page["next_cursor"] is not None
    seen = [item["test_case_id"] for item in page["items"]]
    while page["next_cursor"]:
        page = (await client.get(url, params={"limit": 50, "cursor": page["next_cursor"]})).json()
        seen += [item["test_case_id"] for item in page["items"]]
    assert sorted(seen) == sorted(case["test_case_id"] for case in created["test_cases"])


async def test_waiters_past_the_projects_cap_get_a_503(settings: Settings, api_key: str) -> None:
    capped = msgspec.structs.replace(settings, max_waiters_per_project=2)
    async with (
        serving(create_app(capped)) as url,
        httpx.AsyncClient(base_url=url, headers={"x-api-key": api_key}, timeout=30) as client,
    ):
        dataset = await create_dataset(client)
        await case_in(client, dataset["id"])
        run = await start_run(client, dataset_id=dataset["id"])
        path = f"/api/v1/eval-runs/{run['run_id']}"
        waiting = [asyncio.create_task(client.get(path, params={"wait_s": 3})) for _ in range(2)]
        await asyncio.sleep(0.5)
        refused = await client.get(path, params={"wait_s": 3})
        answered = await asyncio.gather(*waiting)
    body = assert_problem(refused, 503)
    assert refused.headers["retry-after"] == "5" and "requests waiting" in body["detail"]
    assert [answer.status_code for answer in answered] == [200, 200]


# --- 12. The rest of the hardening -------------------------------------------------------------


async def test_jobs_travel_as_json_and_a_pickled_job_is_refused(settings: Settings) -> None:
    redis: QueueConnection = await connect(settings.redis_url)
    queue_name = f"agentlasso:test:{uuid.uuid4().hex[:8]}"
    try:
        chunk = ChunkRef(uuid.uuid4(), 3, f"chunk:{uuid.uuid4()}:3:1")
        await enqueue_lanes(redis, queue_name, [chunk])
        stored = await redis.get(f"arq:job:{chunk.job_id}")
    finally:
        await redis.delete(queue_name, f"arq:job:{chunk.job_id}")
        await redis.aclose()
    job = msgspec.json.decode(stored)
    assert job["f"] == "run_lane" and job["a"] == [str(chunk.run_id), 3, chunk.job_id]

    class Exploit:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, ("touch /tmp/agentlasso-pwned",))

    with pytest.raises(msgspec.DecodeError):
        deserialize(pickle.dumps({"f": "run_lane", "a": [Exploit()]}))
    assert not os.path.exists("/tmp/agentlasso-pwned")  # noqa: ASYNC240


def test_the_dev_key_file_is_made_private_even_when_it_existed(tmp_path: Path) -> None:
    key_file = tmp_path / "dev-api-key"
    key_file.write_text("old\n")
    key_file.chmod(0o644)
    write_private(key_file, "al_new")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_text() == "al_new\n"


async def test_a_migration_edited_after_it_was_applied_is_refused(
    server_urls: ServerUrls, tmp_path: Path
) -> None:
    sql_dir = tmp_path / "sql"
    shutil.copytree(SQL_DIR, sql_dir)
    url = await fresh_database(server_urls.postgres_url, "agentlasso_edited")
    try:
        assert await apply_migrations(url, sql_dir) == []  # all applied by fresh_database
        first = sorted(sql_dir.glob("0001_*.sql"))[0]
        first.write_text(first.read_text() + "\n-- a quiet edit\n")
        with pytest.raises(EditedMigration, match=first.name):
            await apply_migrations(url, sql_dir)
    finally:
        await drop_database(server_urls.postgres_url, url)


async def test_a_run_cannot_point_at_another_projects_dataset_even_in_sql(
    client: httpx.AsyncClient, database_url: str
) -> None:
    dataset = await create_dataset(client)
    connection = await asyncpg.connect(database_url)
    try:
        other_project = await connection.fetchval(
            "INSERT INTO projects (name) VALUES ($1) RETURNING id", f"other-{uuid.uuid4().hex}"
        )
        with pytest.raises(asyncpg.ForeignKeyViolationError, match="eval_runs_dataset_project"):
            await connection.execute(
                "INSERT INTO eval_runs (id, project_id, dataset_id, mode, status, pass_threshold,"
                " total) VALUES ($1, $2, $3, 'ci', 'awaiting_results', 1, 0)",
                uuid.uuid4(), other_project, uuid.UUID(dataset["id"]),
            )  # fmt: skip
    finally:
        await connection.close()
