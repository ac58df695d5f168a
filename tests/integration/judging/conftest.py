"""One judging platform for this package's modules: an API process and worker processes whose
judge is the fake Anthropic API, started once for all of them instead of once a module. Each
test still works in a project of its own (its `api` client's fresh key), and a test that reads
the fake's requests reads only those made after it began."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentlasso.config import Settings
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.judged_runs import judging_platform


@pytest.fixture(scope="package")
def judging(settings: Settings) -> Iterator[tuple[str, FakeAnthropic]]:
    """The judging API process's URL and the fake Anthropic it and its workers call."""
    with judging_platform(settings) as platform:
        yield platform


@pytest.fixture(scope="package")
def judging_url(judging: tuple[str, FakeAnthropic]) -> str:
    """The judging API process's URL."""
    return judging[0]
