"""Past its session's page rate, a page driven by htmx says so where it can be seen, and keeps
what was typed: in Chromium, as a person meets it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest_asyncio
from playwright.async_api import Page, expect

from agentlasso.config import Settings
from agentlasso.server import create_app
from tests.support.api import create_dataset
from tests.support.browser import assert_accessible, screenshot
from tests.support.servers import serving


@pytest_asyncio.fixture
async def base_url(settings: Settings) -> AsyncIterator[str]:
    """The app with a session allowed three pages, then one every 20 s."""
    tight = msgspec.structs.replace(settings, web_rate_limit_burst=3, web_rate_limit_per_s=0.05)
    async with serving(create_app(tight)) as url:
        yield url


async def test_a_search_past_the_sessions_rate_shows_a_notice_and_keeps_the_page(
    signed_in_page: Page, base_url: str, api_key: str
) -> None:
    page = signed_in_page  # signing in led to /datasets: the first page
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as api:
        dataset = await create_dataset(api, name="Refunds")
    await page.goto(f"/datasets/{dataset['id']}")  # the second, and its flaky list the third
    await expect(page.get_by_role("heading", name="Test cases")).to_be_visible()
    async with page.expect_response(lambda answer: answer.status == 429):
        await page.get_by_label("Search cases").fill("refund")
    notice = page.get_by_role("alert").filter(has_text="Too many requests")
    await expect(notice).to_contain_text("try again in")
    # Asked again, the page says it once, not once per refusal.
    async with page.expect_response(lambda answer: answer.status == 429):
        await page.get_by_label("Search cases").fill("refunds")
    await expect(notice).to_have_count(1)
    await expect(page.get_by_label("Search cases")).to_have_value("refunds")
    await expect(page.get_by_role("heading", name="Test cases")).to_be_visible()
    await assert_accessible(page, context="rate limited")
    await screenshot(page, "rate-limited-notice")
