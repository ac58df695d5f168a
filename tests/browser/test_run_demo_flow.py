"""The demo flow in Chromium: start a server-mode run of the demo from the UI, watch it finish
live without a reload, find the failing case, read its failed check's detail beside the reply,
open it in the rubric editor with that reply, change the check, preview, save, re-run the
failed cases and see them pass. axe-core on each page."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest_asyncio
from playwright.async_api import Page, expect

from agentlasso.config import Settings
from agentlasso.devstack.demo import DEMO_CASES, seed_demo
from agentlasso.server import create_app
from tests.support.browser import assert_accessible, screenshot
from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from tests.support.processes import WorkerProcesses
from tests.support.servers import serving

# Each step of a run is awaited this long at most: workers on a loaded machine start slowly.
RUN_TIMEOUT_MS = 60_000


@pytest_asyncio.fixture(scope="module")
async def base_url(settings: Settings, fake_anthropic: FakeAnthropic) -> AsyncIterator[str]:
    """The app, serving the demo support bot as `agentlasso dev` does."""
    demo = msgspec.structs.replace(
        settings, demo_agent=True, anthropic_api_key=FAKE_API_KEY,
        anthropic_base_url=fake_anthropic.base_url,
    )  # fmt: skip
    async with serving(create_app(demo)) as url:
        yield url


async def test_the_demo_from_a_failed_run_to_a_fixed_check_and_a_passing_re_run(
    signed_in_page: Page, base_url: str, api_key: str, workers: WorkerProcesses, tmp_path: Path
) -> None:
    page = signed_in_page
    await asyncio.to_thread(seed_demo, base_url, api_key, tmp_path / "demo.json")
    workers.start()

    await page.get_by_role("link", name="Datasets").click()
    await page.get_by_role("link", name="Demo: support bot").click()
    await page.get_by_role("button", name="Run", exact=True).click()
    await expect(page.get_by_label("Agent")).to_have_value(await _selected_agent(page))
    await assert_accessible(page, context="start a run")
    await page.get_by_label("Labels").fill("branch: demo")
    await page.get_by_role("button", name="Start run").click()

    # The page follows the run: nothing reloads it (a marker set now would not survive one).
    await page.evaluate("window.stillThisPage = true")
    heading = page.get_by_role("heading", level=1)
    await expect(heading).to_contain_text("gate failed", timeout=RUN_TIMEOUT_MS)
    await expect(page.get_by_role("status")).to_contain_text("The run has ended: gate failed")
    assert await page.evaluate("window.stillThisPage === true"), "the page was reloaded"
    summary = page.get_by_role("region", name="Summary")
    cases = len(DEMO_CASES)
    await expect(summary).to_contain_text(f"{cases} of {cases} in: {cases - 1} passed, 1 failed")
    await assert_accessible(page, context="a finished run")

    await page.get_by_role("link", name="tracking must not promise dates").click()
    checks = page.get_by_role("table", name="Every check of the case with its verdict and detail")
    forbidden = checks.get_by_role("row").filter(has_text="Forbidden in output")
    await expect(forbidden).to_contain_text("failed")
    await expect(forbidden).to_contain_text("guarantee")
    reply = page.get_by_role("region", name="The agent's reply")
    await expect(reply).to_contain_text("I guarantee it!")
    await assert_accessible(page, context="the failing case's card")
    await screenshot(page, "demo-failing-case")

    # The check was too strict for this team: a promise of a date is what it must catch.
    await page.get_by_role("link", name="Open in rubric editor").click()
    await expect(page.get_by_label("Reply", exact=True)).to_have_value(
        "Order 7781 is on its way and should arrive Friday. I guarantee it!"
    )
    forbidden_check = page.get_by_role("group", name="Check 3: Forbidden in output")
    await forbidden_check.get_by_label("Text").fill("guaranteed delivery")
    await page.get_by_role("button", name="Grade this reply").click()
    await expect(page.get_by_role("region", name="Preview: passed")).to_be_visible()
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status").filter(has_text="saved")).to_be_visible()

    await page.get_by_role("link", name="Test Runs").click()
    await page.get_by_role("row").filter(has_text="branch: demo").get_by_role("link").click()
    await page.get_by_role("button", name="Re-run failed").click()
    await expect(heading).to_contain_text("gate passed", timeout=RUN_TIMEOUT_MS)
    await expect(page.get_by_role("region", name="Summary")).to_contain_text(
        "1 of 1 in: 1 passed, 0 failed"
    )
    await assert_accessible(page, context="the re-run")
    await screenshot(page, "demo-re-run-passed")


async def _selected_agent(page: Page) -> str:
    """The value of the Agent field's option named Demo support bot."""
    option = page.get_by_label("Agent").locator("option", has_text="Demo support bot")
    value = await option.get_attribute("value")
    assert value, "the demo agent is not offered"
    return value
