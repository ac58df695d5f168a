"""Signing in and out, as a person does it in a browser."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.support.browser import assert_accessible, screenshot


async def test_sign_in_with_a_key_then_sign_out(page: Page, api_key: str) -> None:
    await page.goto("/")
    await expect(page).to_have_url("/login?next=/", ignore_case=True)  # type: ignore[arg-type]
    await assert_accessible(page, context="sign-in")
    await screenshot(page, "sign-in")
    await page.get_by_label("API key").fill("al_not-a-real-key")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_text("not valid")).to_be_visible()
    await page.get_by_label("API key").fill(api_key)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Datasets")).to_be_visible()
    await assert_accessible(page, context="datasets, empty")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    await page.goto("/datasets")
    await expect(page.get_by_label("API key")).to_be_visible()
