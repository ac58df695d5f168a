"""Slow clients and a busy pool: an upload or export read slowly holds no database connection,
and a request that finds the pool exhausted is answered 503 with when to retry."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest
from litestar import Litestar

from agentlasso.config import Settings
from agentlasso.server import create_app
from tests.support.api import create_dataset
from tests.support.assertions import assert_problem
from tests.support.servers import serving


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
