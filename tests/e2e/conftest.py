"""Fixtures for end-to-end tests: a fake agent, and a platform watching production traces
(worker processes: the `workers` fixture of tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from agentlasso.config import Settings
from tests.support.fake_agent import FakeAgentServer, running_fake_agent
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.processes import WorkerProcesses
from tests.support.watching import WatchedPlatform, watched_platform


@pytest.fixture
def fake_agent() -> Iterator[FakeAgentServer]:
    """A fake agent on 127.0.0.1."""
    with running_fake_agent() as server:
        yield server


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    """The fake Anthropic API on 127.0.0.1, judging as told."""
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
async def watching(
    settings: Settings, workers: WorkerProcesses, anthropic: FakeAnthropic
) -> AsyncIterator[WatchedPlatform]:
    """An API process and a worker grading traces a second after they go quiet and evaluating
    alerts every half second, with a new project's key."""
    async with watched_platform(settings, workers, anthropic) as running:
        yield running
