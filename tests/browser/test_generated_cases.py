"""Generated cases used as a person uses them, in Chromium: Generate cases on a dataset, then
the review page (grouped by kind, with the coverage), Preview against the agent, Accept,
Reject, Regenerate, and Edit in the rubric editor where Save accepts. The model is the fake
Anthropic API, the agent a fake on 127.0.0.1; every page is checked with axe-core."""

from __future__ import annotations

import httpx
from playwright.async_api import Locator, Page, expect

from tests.support.api import create_dataset, register_agent
from tests.support.browser import assert_accessible, screenshot
from tests.support.fake_agent import FakeAgentServer
from tests.support.fake_anthropic import FakeAnthropic

TOOLS = [{"name": "stripe.refund", "description": "Refund a charge."},
         {"name": "orders.lookup", "description": "Find an order."}]  # fmt: skip


def drafts(page: Page) -> Locator:
    return page.get_by_role("article")


async def test_cases_are_generated_reviewed_and_accepted(
    signed_in_page: Page,
    base_url: str,
    api_key: str,
    fake_agent: FakeAgentServer,
    fake_anthropic: FakeAnthropic,
) -> None:
    page = signed_in_page
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as api:
        await register_agent(api, fake_agent.url, system_prompt="You refund orders.", tools=TOOLS)
        dataset = await create_dataset(api, name="Generated refunds")

    await page.goto(f"/datasets/{dataset['id']}")
    await page.get_by_role("button", name="Generate cases").click()
    await expect(page.get_by_role("heading", name="Generate cases for")).to_be_visible()
    await assert_accessible(page, context="generate cases form")
    # The project's agent is chosen: its own prompt and tools are generated from.
    await expect(page.get_by_label("Agent")).not_to_have_value("")
    await page.get_by_label("Instruction").fill("Focus on refunds")
    await page.get_by_label("Count").fill("4")
    await page.get_by_role("button", name="Generate", exact=True).click()

    await expect(page.get_by_role("heading", name="Generated cases")).to_be_visible()
    await expect(page.get_by_role("status")).to_contain_text("Generated 4 drafts")
    await expect(drafts(page)).to_have_count(4)
    coverage = page.get_by_role("region", name="Coverage")
    await expect(coverage.get_by_role("row", name="Happy path")).to_contain_text("1")
    await assert_accessible(page, context="review queue")
    await screenshot(page, "generated-cases-review")

    first = drafts(page).first
    await first.get_by_role("button", name="Preview").click()
    preview = page.get_by_role("region", name="Preview:")
    await expect(preview).to_contain_text("I have refunded order 1234")
    assert fake_agent.requests[-1]["source"] == "agentlasso-preview"
    await assert_accessible(page, context="review queue, previewed")

    await drafts(page).first.get_by_role("button", name="Accept").click()
    await expect(page.get_by_role("status")).to_contain_text("the case joined the dataset")
    await expect(drafts(page)).to_have_count(3)
    await drafts(page).first.get_by_role("button", name="Reject").click()
    await expect(page.get_by_role("status")).to_contain_text("Rejected")
    await expect(drafts(page)).to_have_count(2)
    replaced = await drafts(page).first.get_by_role("heading").inner_text()
    await drafts(page).first.get_by_role("button", name="Regenerate").click()
    await expect(page.get_by_role("status")).to_contain_text("Regenerated")
    await expect(drafts(page)).to_have_count(2)
    await expect(page.get_by_role("heading", name=replaced, exact=True)).to_have_count(0)

    await drafts(page).first.get_by_role("link", name="Edit").click()
    await assert_accessible(page, context="rubric editor on a draft")
    await page.get_by_label("Description").fill("Edited while reviewing.")
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status")).to_contain_text("Saved as revision 1")
    await expect(page.get_by_label("Description")).to_have_value("Edited while reviewing.")

    await page.goto(f"/datasets/{dataset['id']}")
    await expect(page.get_by_text("2 test cases")).to_be_visible()
    await page.goto(f"/datasets/{dataset['id']}/drafts")
    await expect(drafts(page)).to_have_count(1)
