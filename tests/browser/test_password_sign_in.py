"""Setting a password with the link `agentlasso users create` prints, then signing in with an
email and password, as a person does it in a browser."""

from __future__ import annotations

import uuid

from playwright.async_api import Page, expect

from agentlasso.services.password_sign_in import NO_MATCH
from tests.support.accounts import PASSWORD, new_email, new_user_token
from tests.support.browser import assert_accessible, screenshot


async def test_set_a_password_with_the_link_then_sign_in_with_it(
    page: Page, database_url: str
) -> None:
    email = new_email()
    token = await new_user_token(database_url, email, f"acme-{uuid.uuid4().hex[:8]}")
    await page.goto(f"/set-password?token={token}")
    await expect(page.get_by_text(email)).to_be_visible()
    await assert_accessible(page, context="set password")
    await screenshot(page, "set-password")
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_label("Repeat password").fill(PASSWORD)
    await page.get_by_role("button", name="Set password").click()
    await expect(page.get_by_role("heading", name="Datasets")).to_be_visible()
    await page.get_by_role("button", name="Sign out").click()

    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password", exact=True).fill("not my password at all")
    await page.get_by_role("button", name="Sign in", exact=True).click()
    await expect(page.get_by_role("alert")).to_have_text(NO_MATCH)
    await assert_accessible(page, context="sign-in, refused")
    await screenshot(page, "sign-in-refused")
    await expect(page.get_by_label("Email")).to_have_value(email)
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_role("button", name="Sign in", exact=True).click()
    await expect(page.get_by_role("heading", name="Datasets")).to_be_visible()

    await page.goto(f"/set-password?token={token}")
    await expect(page.get_by_role("alert")).to_contain_text("has been used or has expired")
    await assert_accessible(page, context="set password, link spent")
