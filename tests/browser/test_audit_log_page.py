"""Settings -> Audit log in Chromium: a person changes Settings, reads who did it, and narrows
the log to one action (axe-core on each page)."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect

from tests.support.browser import assert_accessible, screenshot

JUDGE_SECRET = "sk-ant-browser-judge-key-never-shown"


async def test_the_audit_log_shows_settings_changes_and_filters_by_action(
    signed_in_page: Page, api_key: str
) -> None:
    page = signed_in_page
    await page.goto("/settings")
    await page.get_by_label("Anthropic API key").fill(JUDGE_SECRET)
    await page.get_by_role("button", name="Save judge settings").click()
    await expect(page.get_by_text("Judge settings saved.")).to_be_visible()
    await page.get_by_label("Keep traces for").fill("9")
    await page.get_by_role("button", name="Save trace settings").click()
    await expect(page.get_by_text("Traces are now kept 9 days.")).to_be_visible()

    await page.goto("/settings")
    await page.get_by_role("link", name="Audit log").click()
    await expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    rows = page.get_by_role("table").get_by_role("row")
    # The header, then newest first: retention, the judge key, the sign-in, the CLI's key.
    await expect(rows).to_have_count(5)
    await expect(rows.nth(1)).to_contain_text("Trace retention changed")
    await expect(rows.nth(1)).to_contain_text("before: 30; after: 9")
    await expect(rows.nth(2)).to_contain_text("Judge key set")
    await expect(rows.nth(2)).to_contain_text(f"Key {api_key[:11]}…")
    await expect(rows.nth(3)).to_contain_text("Signed in")
    await expect(rows.nth(4)).to_contain_text("Command line (keys create)")
    assert JUDGE_SECRET not in await page.content()
    await assert_accessible(page, context="audit log")
    await screenshot(page, "audit-log")

    await page.get_by_label("Action").select_option(label="Judge key set")
    await page.get_by_role("button", name="Show").click()
    await expect(page).to_have_url(re.compile(r"/settings/audit-log\?.*action=judge_key\.set"))
    await expect(rows).to_have_count(2)
    await expect(rows.nth(1)).to_contain_text("Judge key set")
    await expect(page.get_by_label("Action")).to_have_value("judge_key.set")
    await assert_accessible(page, context="audit log filtered")

    await page.get_by_label("Actor").select_option(value="cli")
    await page.get_by_role("button", name="Show").click()
    await expect(page.get_by_text("No entries match.")).to_be_visible()
    await assert_accessible(page, context="audit log, nothing matching")
