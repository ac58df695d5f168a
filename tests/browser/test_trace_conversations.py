"""A conversation of traces in Chromium: a trace links to its conversation, whose page shows
the turns in time order and adds a conversation case with one offered check unticked. axe-core
on each page."""

from __future__ import annotations

import httpx
from playwright.async_api import Page, expect

from agentlasso.db.pool import create_pool
from agentlasso_workers.trace_reading import read_waiting_traces
from tests.support.browser import assert_accessible, screenshot
from tests.support.otlp import new_trace_id, protobuf_request
from tests.support.otlp_conversations import REPLIES, USERS, three_turns


async def send_conversation(base_url: str, api_key: str, database_url: str) -> str:
    """Send a three-turn conversation as an exporter would; read it as the worker does."""
    conversation_id = f"chat-{new_trace_id()[:8]}"
    bearer = {"content-type": "application/x-protobuf", "authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(base_url=base_url) as exporter:
        for spans in three_turns(conversation_id):
            response = await exporter.post(
                "/v1/traces", content=protobuf_request(spans), headers=bearer
            )
            assert response.status_code == 200, response.text
        made = await exporter.post(
            "/api/v1/datasets", json={"name": "Chats"}, headers={"x-api-key": api_key}
        )
        assert made.status_code == 201, made.text
    pool = await create_pool(database_url, min_size=1, max_size=2, acquire_timeout_s=10)
    try:
        await read_waiting_traces(pool)
    finally:
        await pool.close()
    return conversation_id


async def test_a_conversation_of_traces_becomes_a_conversation_case(
    signed_in_page: Page, base_url: str, api_key: str, database_url: str
) -> None:
    page = signed_in_page
    conversation_id = await send_conversation(base_url, api_key, database_url)
    await page.get_by_role("link", name="Traces").click()
    await expect(page.get_by_role("link", name="Conversation")).to_have_count(3)
    await page.get_by_role("link", name="Conversation").first.click()

    await expect(page.get_by_role("heading", level=1)).to_have_text(
        f"Conversation {conversation_id}"
    )
    turns = page.get_by_role("region", name="Turns").get_by_role("listitem")
    await expect(turns).to_have_count(3)
    for index in range(3):
        await expect(turns.nth(index)).to_contain_text(f"Turn {index + 1}")
        await expect(turns.nth(index)).to_contain_text(USERS[index])
        await expect(turns.nth(index)).to_contain_text(REPLIES[index])
    await expect(turns.nth(1)).to_contain_text("called lookup_order, update_address")
    await assert_accessible(page, context="conversation of traces")
    await screenshot(page, "trace-conversation")

    adding = page.get_by_role("region", name="Add to dataset")
    await adding.get_by_label("Dataset").select_option(label="Chats")
    second = adding.get_by_role("group", name="Turn 2: checks offered from its tool calls")
    unticked = second.get_by_label("Tool must be called: update_address (critical)")
    await expect(unticked).to_be_checked()
    await unticked.uncheck()
    await adding.get_by_role("button", name="Add to dataset").click()
    await expect(page.get_by_role("status")).to_contain_text("Added 1 test case")
    await assert_accessible(page, context="case from a conversation")
    await screenshot(page, "case-from-conversation")

    await page.go_back()
    await page.reload()
    cases = page.get_by_role("region", name="Test cases made from this conversation")
    await expect(cases.get_by_role("link")).to_contain_text("in Chats")
    await turns.first.get_by_role("link").click()
    await expect(page.get_by_text("Turn 1 of 3 of conversation")).to_be_visible()
    await assert_accessible(page, context="a trace of a conversation")
