"""Shared fixtures: real PostgreSQL and Redis, one database per test run, a real HTTP server."""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from agentlasso.config import Settings
from agentlasso.server import create_app
from tests.support import promptfoo
from tests.support.databases import ServerUrls, drop_database, fresh_database, new_project_key
from tests.support.processes import WorkerProcesses, api_process
from tests.support.servers import serving
from tests.support.web import browser, signed_in_csrf
from tests.support.wheel import build_wheel_from_clone


@pytest.fixture(scope="session")
def server_urls() -> Iterator[ServerUrls]:
    """DATABASE_URL / REDIS_URL when set, else embedded servers started for this run."""
    database_url = os.environ.get("DATABASE_URL")
    redis_url = os.environ.get("REDIS_URL")
    if database_url and redis_url:
        yield ServerUrls(database_url, redis_url)
        return
    from agentlasso.devstack.services import remove_embedded_data, start_embedded_services

    data_dir = Path(tempfile.mkdtemp(prefix="agentlasso-test-"))
    try:
        with start_embedded_services(
            data_dir, database_url=database_url, redis_url=redis_url
        ) as embedded:
            yield ServerUrls(embedded.database_url, embedded.redis_url)
    finally:
        remove_embedded_data(data_dir)


@pytest.fixture(scope="session")
def agentlasso_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel --no-deps` builds from a clean clone of HEAD, once per run."""
    return build_wheel_from_clone(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def promptfoo_installed() -> Path:
    """promptfoo's executable (installed once into a cache); without it, skip, or fail where
    AGENTLASSO_REQUIRE_PROMPTFOO=1 (CI, whose .ci/run installs it before the tests)."""
    try:
        return promptfoo.install()
    except promptfoo.PromptfooMissing as exc:
        if os.environ.get("AGENTLASSO_REQUIRE_PROMPTFOO") == "1":
            pytest.fail(f"{exc} (AGENTLASSO_REQUIRE_PROMPTFOO=1 makes this a failure)")
        pytest.skip(str(exc))


@pytest_asyncio.fixture(scope="session")
async def database_url(server_urls: ServerUrls) -> AsyncIterator[str]:
    """A fresh database for this test run, migrated, dropped at the end."""
    url = await fresh_database(server_urls.postgres_url)
    yield url
    await drop_database(server_urls.postgres_url, url)


@pytest.fixture(scope="session")
def settings(database_url: str, server_urls: ServerUrls) -> Settings:
    """The configuration the test server runs with (its own queue namespace in Redis)."""
    return Settings(
        database_url=database_url,
        redis_url=server_urls.redis_url,
        queue_name=f"agentlasso:test:{uuid.uuid4().hex[:12]}",
        secret_key="dGVzdC1rZXktZm9yLWFnZW50bGFzc28tMzItYnl0ZXM=",  # 32 fixed bytes, base64
        allow_private_agents=True,
        # The e2e tests find their worker processes by pid (the default hides it from tenants).
        show_worker_hosts=True,
        # Every test signs in from 127.0.0.1: one address for the whole run's open pages
        # (tests/integration/test_open_page_limits.py holds the limit itself).
        open_page_rate_limit_per_s=1000.0,
        open_page_rate_limit_burst=100_000,
    )


@pytest_asyncio.fixture(scope="session")
async def base_url(settings: Settings) -> AsyncIterator[str]:
    """The API served over real HTTP on 127.0.0.1 for the whole run."""
    async with serving(create_app(settings)) as url:
        yield url


@pytest_asyncio.fixture
async def api_key(database_url: str) -> str:
    """The key of a fresh project."""
    return await new_project_key(database_url)


@pytest_asyncio.fixture
async def client(base_url: str, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client authenticated as a fresh project."""
    async with httpx.AsyncClient(
        base_url=base_url, headers={"x-api-key": api_key}, timeout=120
    ) as http:
        yield http


@pytest_asyncio.fixture
async def anonymous(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client without a key."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        yield http


@pytest.fixture(scope="session")
def api_process_url(settings: Settings) -> Iterator[str]:
    """`agentlasso api` as a separate process on the test database, configured like the tests."""
    env = {
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
        "AGENTLASSO_QUEUE": settings.queue_name,
    }
    with api_process(settings.database_url, settings.redis_url, env) as (url, _pid):
        yield url


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Block and record every connect to a non-loopback address made in this process."""
    attempted: list[Any] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def allowed(address: Any) -> bool:
        try:
            return isinstance(address, tuple) and ipaddress.ip_address(address[0]).is_loopback
        except ValueError:
            return False

    def connect(sock: socket.socket, address: Any) -> None:
        if not allowed(address):
            attempted.append(address)
            raise PermissionError(f"test network is loopback only, not {address!r}")
        real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        if not allowed(address):
            attempted.append(address)
            raise PermissionError(f"test network is loopback only, not {address!r}")
        return real_connect_ex(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    yield attempted
    assert attempted == [], "a connection to a non-loopback address was attempted"


@pytest.fixture
def workers(settings: Settings) -> Iterator[WorkerProcesses]:
    """Start `agentlasso worker` processes with `workers.start()`; all are stopped after the
    test."""
    pool = WorkerProcesses(
        settings.database_url, settings.redis_url, settings.queue_name, settings.secret_key or ""
    )
    try:
        yield pool
    finally:
        pool.stop_all()


@pytest_asyncio.fixture
async def web(base_url: str, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    """A browser (cookies, forms, no JavaScript) signed in as the `client` fixture's project."""
    async with browser(base_url) as signed_in:
        await signed_in_csrf(signed_in, api_key)
        yield signed_in
