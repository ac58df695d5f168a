"""Settings -> Members in Chromium: an owner invites a person, the person follows the link and
is signed in with the role (a page above it is a 403 page naming the role it needs), the owner
changes their role, then removes them, and their next request is signed out (axe-core on the
Members page)."""

from __future__ import annotations

import uuid

from playwright.async_api import Browser, Page, expect

from tests.browser.conftest import VIEWPORT
from tests.support.accounts import PASSWORD, new_email, new_user_token
from tests.support.browser import PageGuard, assert_accessible, screenshot


async def set_a_password(page: Page, link: str) -> None:
    await page.goto(link)
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_label("Repeat password").fill(PASSWORD)
    await page.get_by_role("button", name="Set password").click()
    await expect(page.get_by_role("heading", name="Datasets")).to_be_visible()


async def test_invite_accept_change_a_role_and_remove_a_member(
    page: Page, browser: Browser, base_url: str, database_url: str, page_guard: PageGuard
) -> None:
    owner_email, email = new_email(), new_email()
    token = await new_user_token(database_url, owner_email, f"crew-{uuid.uuid4().hex[:8]}")
    await set_a_password(page, f"/set-password?token={token}")
    await page.goto("/settings")
    await page.get_by_role("link", name="Members").click()
    await expect(page.get_by_role("heading", name="Members", exact=True)).to_be_visible()
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Role", exact=True).select_option("viewer")
    await page.get_by_role("button", name="Invite").click()
    link = await page.get_by_label(f"A link for {email}").input_value()
    await assert_accessible(page, context="members, an invitation made")
    await screenshot(page, "members")

    context = await browser.new_context(viewport=VIEWPORT, base_url=base_url)
    await page_guard.install(context)
    try:
        theirs = await context.new_page()
        await set_a_password(theirs, link)
        answer = await theirs.goto("/settings/members")
        assert answer is not None and answer.status == 403
        await expect(theirs.get_by_role("main")).to_contain_text(
            'Your role is "viewer"; listing the members needs the role "admin" or above.'
        )
        await assert_accessible(theirs, context="members, refused to a viewer")

        await page.goto("/settings/members")
        row = page.get_by_role("row").filter(has_text=email)
        await row.get_by_label(f"Role of {email}").select_option("admin")
        await row.get_by_role("button", name=f"Change role of {email}").click()
        await expect(page.get_by_role("status")).to_have_text("Role changed.")
        await theirs.goto("/settings/members")
        await expect(theirs.get_by_role("heading", name="Members", exact=True)).to_be_visible()

        row = page.get_by_role("row").filter(has_text=email)
        await row.get_by_role("button", name=f"Remove {email}").click()
        await expect(page.get_by_role("status")).to_contain_text("Member removed")
        await expect(page.get_by_role("row").filter(has_text=email)).to_have_count(0)
        await assert_accessible(page, context="members, one removed")
        await theirs.goto("/datasets")
        await expect(theirs).to_have_url(f"{base_url}/login?next=/datasets")
    finally:
        await context.close()
