"""Test Runs in Chromium: from the list to a failed run, to the failing case's card, where the
failed check's detail sits beside the agent's reply, and on to the rubric editor with that
reply ready to grade; axe-core on each page."""

from __future__ import annotations

import httpx
from playwright.async_api import Page, expect

from tests.support.browser import assert_accessible, screenshot
from tests.support.runs import ci_run_with_one_failure


async def test_a_failed_gate_leads_to_the_reply_beside_the_failed_check(
    signed_in_page: Page, base_url: str, api_key: str
) -> None:
    page = signed_in_page
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        await ci_run_with_one_failure(client)

    await page.get_by_role("link", name="Test Runs").click()
    await assert_accessible(page, context="runs")
    await page.get_by_role("row").nth(1).get_by_role("link").click()
    await expect(page.get_by_role("heading", name="Run of Refunds")).to_contain_text("gate failed")
    await assert_accessible(page, context="run")
    await page.get_by_role("link", name="A refund question").click()

    await expect(page.get_by_role("heading", level=1)).to_contain_text("failed")
    checks = page.get_by_role("table", name="Every check of the case with its verdict and detail")
    failed = checks.get_by_role("row").filter(has_text="Tool must NOT be called")
    await expect(failed).to_contain_text("failed")
    await expect(failed).to_contain_text("orders.cancel")
    reply = page.get_by_role("region", name="The agent's reply").locator("pre.reply")
    await expect(reply).to_have_text("I cancelled the order for you.")
    await assert_accessible(page, context="case card")
    await screenshot(page, "case-card")

    # From the card to the rubric editor, with the very reply that failed ready to grade.
    await page.get_by_role("link", name="Open in rubric editor").click()
    await expect(page.get_by_label("Reply", exact=True)).to_have_value(
        "I cancelled the order for you."
    )
    await expect(page.get_by_label("Tool calls")).to_contain_text("orders.cancel")
    await page.get_by_role("button", name="Grade this reply").click()
    preview = page.get_by_role("region", name="Preview: failed")
    rows = preview.get_by_role("row")
    await expect(rows.filter(has_text="Tool must NOT be called")).to_contain_text("failed")
    await assert_accessible(page, context="rubric editor with a run's reply")
