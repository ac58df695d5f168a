"""Processes for end-to-end tests: the API as `agentlasso api`, and a fake agent."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ServerUrls
from tests.fake_agent import FakeAgentServer, running_fake_agent
from tests.perf.harness import free_port, wait_ready

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def api_process_url(database_url: str, server_urls: ServerUrls) -> Iterator[str]:
    """`agentlasso api` as a real process on the test database."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": server_urls.redis_url}
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "api", "--port", str(port), "--log-level", "warning"],
        cwd=ROOT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def fake_agent() -> Iterator[FakeAgentServer]:
    """A fake agent on 127.0.0.1."""
    with running_fake_agent() as server:
        yield server
