"""Signing in and out, as a person does it in a browser."""

from __future__ import annotations

import asyncpg
from playwright.async_api import Page, expect

from agentlasso.services.web_sessions import create_login_link_token
from tests.support.browser import assert_accessible, screenshot
from tests.support.web import project_of


async def test_sign_in_with_a_key_then_sign_out(page: Page, api_key: str) -> None:
    await page.goto("/")
    await expect(page).to_have_url("/login?next=/", ignore_case=True)  # type: ignore[arg-type]
    await assert_accessible(page, context="sign-in")
    await screenshot(page, "sign-in")
    await page.get_by_label("API key").fill("al_not-a-real-key")
    await page.get_by_role("button", name="Sign in with API key").click()
    await expect(page.get_by_text("not valid")).to_be_visible()
    await page.get_by_label("API key").fill(api_key)
    await page.get_by_role("button", name="Sign in with API key").click()
    await expect(page.get_by_role("heading", name="Datasets")).to_be_visible()
    await assert_accessible(page, context="datasets, empty")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("button", name="Sign in with API key")).to_be_visible()
    await page.goto("/datasets")
    await expect(page.get_by_label("API key")).to_be_visible()


async def test_a_sign_in_link_opens_a_page_whose_button_signs_in_once(
    page: Page, api_key: str, database_url: str
) -> None:
    token = await link_token_for(database_url, api_key)
    await page.goto(f"/login?token={token}&next=/runs")
    button = page.get_by_role("button", name="Sign in to")
    await expect(button).to_be_visible()
    await assert_accessible(page, context="sign-in link")
    await screenshot(page, "sign-in-link")
    # Opening the link (twice, as a link scanner and then the person may) signed nobody in.
    await page.reload()
    assert "agentlasso_session" not in {cookie["name"] for cookie in await page.context.cookies()}
    await button.click()
    await expect(page).to_have_url("/runs", ignore_case=True)  # type: ignore[arg-type]
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    await page.get_by_role("button", name="Sign out").click()
    await page.goto(f"/login?token={token}")
    await expect(page.get_by_text("has been used or has expired")).to_be_visible()
    await expect(page.get_by_label("API key")).to_be_visible()


async def link_token_for(database_url: str, key: str) -> str:
    """A fresh one-time sign-in link's token for the key's project."""
    connection = await asyncpg.connect(database_url)
    try:
        return await create_login_link_token(connection, await project_of(connection, key))
    finally:
        await connection.close()
