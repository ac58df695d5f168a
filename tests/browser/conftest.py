"""Browser fixtures: Debian's Chromium driven by Playwright's async API, one context per test.

Every page is held to the app's own origin and to its Content-Security-Policy: a request to
another origin is aborted, and it or a CSP refusal fails the test when the test ends.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import msgspec
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, ViewportSize, async_playwright

from agentlasso.config import Settings
from agentlasso.server import create_app
from tests.support.browser import PageGuard, origin_of, screenshot
from tests.support.fake_agent import FakeAgentServer, running_fake_agent
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from tests.support.servers import serving

INSTALL_HINT = "install it with `apt-get install -y chromium fonts-liberation`"
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
PHASE_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the test, so `page` knows at teardown whether it failed."""
    report = yield
    item.stash.setdefault(PHASE_REPORTS, {})[report.when] = report
    return report


def find_chromium() -> tuple[str | None, str]:
    """The Chromium to drive, or None, and where it was looked for."""
    explicit = os.environ.get("AGENTLASSO_CHROMIUM")
    if explicit:
        return (explicit if Path(explicit).is_file() else None), f"{explicit} (AGENTLASSO_CHROMIUM)"
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium", "/usr/bin/chromium"
    return shutil.which("chromium"), "/usr/bin/chromium or `chromium` on PATH"


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Chromium's path; without one, skip, or fail where AGENTLASSO_REQUIRE_BROWSER=1 (CI)."""
    path, looked_at = find_chromium()
    if path is not None:
        return path
    reason = f"Chromium not found at {looked_at}; {INSTALL_HINT}"
    if os.environ.get("AGENTLASSO_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (AGENTLASSO_REQUIRE_BROWSER=1 makes this a failure)")
    pytest.skip(reason)


@pytest_asyncio.fixture(scope="session")
async def browser(chromium_path: str) -> AsyncIterator[Browser]:
    """One Chromium for the whole run."""
    async with async_playwright() as playwright:
        # --no-sandbox: CI runs the tests as root, where Chromium's sandbox will not start.
        launched = await playwright.chromium.launch(
            executable_path=chromium_path, args=["--no-sandbox"]
        )
        yield launched
        await launched.close()


@pytest.fixture
def page_guard(base_url: str) -> PageGuard:
    """What this test's pages tried that is forbidden; checked when `page` is torn down."""
    return PageGuard(origin_of(base_url))


@pytest_asyncio.fixture
async def page(
    browser: Browser, base_url: str, page_guard: PageGuard, request: pytest.FixtureRequest
) -> AsyncIterator[Page]:
    """A page in a fresh context on the app; screenshotted if the test fails."""
    context = await browser.new_context(viewport=VIEWPORT, base_url=base_url)
    await page_guard.install(context)
    try:
        new_page = await context.new_page()
        yield new_page
        reports = request.node.stash.get(PHASE_REPORTS, {})
        if any(report.failed for report in reports.values()):
            await screenshot(new_page, re.sub(r"[^\w.-]+", "_", request.node.name))
    finally:
        await context.close()
    page_guard.assert_clean()


@pytest_asyncio.fixture
async def signed_in_page(page: Page, api_key: str) -> Page:
    """`page`, signed in through the login form as the `api_key` fixture's project."""
    await page.goto("/login")
    await page.get_by_label("API key").fill(api_key)
    await page.get_by_role("button", name="Sign in with API key").click()
    await page.wait_for_url(lambda url: urlsplit(url).path.rstrip("/") != "/login")
    return page


@pytest.fixture(scope="session")
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """The fake Anthropic API the web app's judge calls."""
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture(scope="session")
def fake_agent() -> Iterator[FakeAgentServer]:
    """A fake agent a project registers under Settings, Your agent."""
    with running_fake_agent() as server:
        yield server


@pytest_asyncio.fixture(scope="session")
async def base_url(settings: Settings, fake_anthropic: FakeAnthropic) -> AsyncIterator[str]:
    """The app for browser tests: as the other tests', with a judge (the fake Anthropic)."""
    judged = msgspec.structs.replace(
        settings, anthropic_api_key=FAKE_API_KEY, anthropic_base_url=fake_anthropic.base_url
    )
    async with serving(create_app(judged)) as url:
        yield url
