"""A conversation case from the editor to a failing run, in Chromium: three turns written in
the rubric editor, previewed against a conversational agent (which forgets the order number
at turn 3), saved, run from the dataset's page by the platform's workers, and the failing turn
read on the case card. axe-core on each page."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.browser.test_conversations import write_three_turns
from tests.support.api import register_agent
from tests.support.browser import assert_accessible, screenshot
from tests.support.conversational_agent import ConversationalAgent, running_conversational_agent
from tests.support.processes import WorkerProcesses

RUN_TIMEOUT_MS = 60_000
# (the user's message, the check's button, the check's field, its value)
TURNS = [
    ("Hi, my order 1234 has not arrived.", "Tool must be called", "Tool", "orders.lookup"),
    ("Can I get a refund?", "Tool must be called", "Tool", "stripe.refund"),
    ("What was my order number again?", "Output must contain", "Text", "1234"),
]


@pytest.fixture
def agent() -> Iterator[ConversationalAgent]:
    with running_conversational_agent() as server:
        server.forget_at_turn_3 = True
        yield server


async def test_a_conversation_previewed_run_and_its_failing_turn_read(
    signed_in_page: Page,
    base_url: str,
    api_key: str,
    agent: ConversationalAgent,
    workers: WorkerProcesses,
) -> None:
    page = signed_in_page
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        await register_agent(client, agent.url, name="Order bot")
    workers.start()
    await page.get_by_role("link", name="Datasets").click()
    await page.get_by_role("button", name="New dataset").click()
    await page.get_by_label("Name").fill("Order conversations")
    await page.get_by_role("button", name="Create dataset").click()
    await page.get_by_role("button", name="Add test case").click()
    await write_three_turns(page, TURNS, "Order over three turns")

    await page.get_by_role("button", name="Preview", exact=True).click()
    preview = page.get_by_role("region", name="Preview: failed")
    await expect(preview).to_be_visible()
    turns = preview.locator("li.turn")
    await expect(turns).to_have_count(3)
    await expect(turns.nth(0)).to_contain_text("I found order 1234")
    await expect(turns.nth(2)).to_contain_text("something I do not know")
    await expect(turns.nth(2).get_by_role("row").filter(has_text="1234")).to_contain_text("failed")
    await assert_accessible(page, context="rubric editor, a conversation previewed")
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status")).to_contain_text("Saved as revision 1")

    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Datasets").click()
    await page.get_by_role("link", name="Order conversations").click()
    await page.get_by_role("button", name="Run", exact=True).click()
    await page.get_by_role("button", name="Start run").click()
    heading = page.get_by_role("heading", level=1)
    await expect(heading).to_contain_text("gate failed", timeout=RUN_TIMEOUT_MS)
    await assert_accessible(page, context="a finished run of a conversation")

    await page.get_by_role("link", name="Order over three turns").click()
    chat = page.locator("li.turn")
    await expect(chat).to_have_count(3)
    failing = chat.nth(2)
    await expect(failing).to_contain_text("What was my order number again?")
    await expect(failing).to_contain_text("something I do not know")
    await expect(failing.get_by_role("row").filter(has_text="1234")).to_contain_text("failed")
    await expect(chat.nth(0).get_by_role("row").filter(has_text="orders.lookup")).to_contain_text(
        "passed"
    )
    await expect(page.get_by_text("How it ended:")).to_be_visible()
    await assert_accessible(page, context="case card of a failing conversation")
    await screenshot(page, "conversation-run-failing-turn")
