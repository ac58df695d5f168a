"""Tool fixtures written in the rubric editor, in Chromium (contract section 14): refused in
words while they are not valid, saved with the case, shown again when it is opened, and sent
to the agent by Preview. axe-core on the page."""

from __future__ import annotations

import json
import re

from playwright.async_api import Page, expect

from tests.support.browser import assert_accessible
from tests.support.fake_agent import FakeAgentServer

FIXTURES = {"orders.lookup": [{"arguments": {"order": 1234}, "result": {"status": "paid"}}]}


async def test_fixtures_are_edited_saved_and_sent_by_preview(
    signed_in_page: Page, fake_agent: FakeAgentServer
) -> None:
    page = signed_in_page
    await page.goto("/settings")
    await page.get_by_label("URL").fill(fake_agent.url)
    await page.get_by_role("button", name="Save agent").click()
    await page.get_by_role("link", name="Datasets").click()
    await page.get_by_role("button", name="New dataset").click()
    await page.get_by_label("Name").fill("Refunds with fixtures")
    await page.get_by_role("button", name="Create dataset").click()
    await page.get_by_role("button", name="Add test case").click()
    await page.get_by_label("Input").fill("refund order 1234")

    await page.get_by_label("Tool fixtures").fill('{"orders.lookup": [1, 2')
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_text("The tool fixtures are not valid here")).to_be_visible()
    await assert_accessible(page, context="rubric editor refusing tool fixtures")

    await page.get_by_label("Tool fixtures").fill(json.dumps(FIXTURES))
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status")).to_contain_text("Saved as revision 1")
    await page.reload()
    assert json.loads(await page.get_by_label("Tool fixtures").input_value()) == FIXTURES

    await page.get_by_role("button", name="Preview", exact=True).click()
    await expect(page.get_by_role("region", name=re.compile(r"^Preview: "))).to_be_visible()
    assert fake_agent.requests[-1]["tool_fixtures"] == FIXTURES
    assert fake_agent.requests[-1]["source"] == "agentlasso-preview"
