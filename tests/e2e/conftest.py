"""Processes for end-to-end tests: the API as `agentlasso api`, and a fake agent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import ServerUrls
from tests.fake_agent import FakeAgentServer, running_fake_agent
from tests.perf.harness import api_process


@pytest.fixture(scope="session")
def api_process_url(database_url: str, server_urls: ServerUrls) -> Iterator[str]:
    """`agentlasso api` as a real process on the test database."""
    with api_process(database_url, server_urls.redis_url) as (url, _pid):
        yield url


@pytest.fixture
def fake_agent() -> Iterator[FakeAgentServer]:
    """A fake agent on 127.0.0.1."""
    with running_fake_agent() as server:
        yield server
