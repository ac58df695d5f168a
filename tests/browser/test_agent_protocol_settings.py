"""Registering the endpoint a team already has, in Chromium (contract section 14): Settings,
Your agent, with the protocol an A2A agent built with the A2A SDK speaks; its card is read and
shown, and Send test message gets the agent's reply. axe-core on the page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.async_api import Page, expect

from tests.support.a2a_agent import RunningA2aAgent, running_a2a_agent
from tests.support.browser import assert_accessible


@pytest.fixture
def a2a_agent() -> Iterator[RunningA2aAgent]:
    with running_a2a_agent() as agent:
        yield agent


async def test_an_a2a_agent_is_registered_from_settings_and_answers_a_test_message(
    signed_in_page: Page, a2a_agent: RunningA2aAgent
) -> None:
    page = signed_in_page
    await page.get_by_role("link", name="Settings").click()
    await page.get_by_label("Protocol").select_option(label="Agent2Agent (A2A)")
    await page.get_by_label("URL").fill(a2a_agent.base_url)
    await page.get_by_role("button", name="Save agent").click()

    await expect(page.get_by_role("status").filter(has_text="Agent saved")).to_be_visible()
    await expect(page.get_by_text("A2A agent card: Refund agent")).to_be_visible()
    await expect(page.get_by_text("skills: Refunds")).to_be_visible()
    await assert_accessible(page, context="settings with an A2A agent")

    await page.get_by_label("Message").fill("task refund order 1234")
    await page.get_by_role("button", name="Send test message").click()
    await expect(page.get_by_text("done: task refund order 1234")).to_be_visible()


async def test_an_endpoint_that_is_not_what_the_protocol_says_is_refused_in_words(
    signed_in_page: Page, a2a_agent: RunningA2aAgent
) -> None:
    page = signed_in_page
    await page.get_by_role("link", name="Settings").click()
    await page.get_by_label("Protocol").select_option(label="OpenAI-compatible chat completions")
    await page.get_by_label("URL").fill(f"{a2a_agent.base_url}/a2a")
    await page.get_by_label("Model").fill("gpt-test")
    await page.get_by_role("button", name="Save agent").click()

    await expect(page.get_by_text("did not answer a chat completion")).to_be_visible()
    await assert_accessible(page, context="settings refusing an endpoint")
