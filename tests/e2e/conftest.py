"""Fixtures for end-to-end tests: a fake agent, and worker processes on the test database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.config import Settings
from tests.support.fake_agent import FakeAgentServer, running_fake_agent
from tests.support.processes import WorkerProcesses


@pytest.fixture
def fake_agent() -> Iterator[FakeAgentServer]:
    """A fake agent on 127.0.0.1."""
    with running_fake_agent() as server:
        yield server


@pytest.fixture
def workers(settings: Settings) -> Iterator[WorkerProcesses]:
    """Start worker processes with `workers.start()`; all are stopped after the test."""
    pool = WorkerProcesses(
        settings.database_url, settings.redis_url, settings.queue_name, settings.secret_key or ""
    )
    try:
        yield pool
    finally:
        pool.stop_all()
