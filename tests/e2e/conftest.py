"""Fixtures for end-to-end tests: a fake agent (worker processes: the `workers` fixture of
tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_agent import FakeAgentServer, running_fake_agent


@pytest.fixture
def fake_agent() -> Iterator[FakeAgentServer]:
    """A fake agent on 127.0.0.1."""
    with running_fake_agent() as server:
        yield server
