"""Traces in Chromium: a trace sent over OTLP is found on the list, read on its page (the
conversation and the tool-call timeline), and added to a dataset with one offered check
unticked; the new case shows the checks kept and links back to its trace. axe-core on each
page."""

from __future__ import annotations

import httpx
from playwright.async_api import Page, expect

from agentlasso.db.pool import create_pool
from agentlasso_workers.trace_reading import read_waiting_traces
from tests.support.browser import assert_accessible, screenshot
from tests.support.otlp import protobuf_request, refund_conversation

USER_TEXT = "Please refund order 1234, it arrived broken."
REPLY = "I have refunded order 1234; the money is back within 3-5 business days."


async def send_refund_trace(base_url: str, api_key: str, database_url: str) -> str:
    """Send the refund conversation as an exporter would; read it as the worker does."""
    spans = refund_conversation()
    bearer = {"content-type": "application/x-protobuf", "authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(base_url=base_url) as exporter:
        response = await exporter.post(
            "/v1/traces", content=protobuf_request(spans), headers=bearer
        )
        assert response.status_code == 200, response.text
        made = await exporter.post(
            "/api/v1/datasets", json={"name": "Refunds"}, headers={"x-api-key": api_key}
        )
        assert made.status_code == 201, made.text
    pool = await create_pool(database_url, min_size=1, max_size=2, acquire_timeout_s=10)
    try:
        await read_waiting_traces(pool)
    finally:
        await pool.close()
    return spans[0].trace_id


async def test_a_trace_becomes_a_test_case_with_the_checks_kept(
    signed_in_page: Page, base_url: str, api_key: str, database_url: str
) -> None:
    page = signed_in_page
    await page.get_by_role("link", name="Traces").click()
    await expect(page.get_by_role("heading", name="No traces yet")).to_be_visible()
    await expect(page.get_by_text(f"{base_url}/v1/traces").first).to_be_visible()
    await assert_accessible(page, context="traces, empty")

    trace_id = await send_refund_trace(base_url, api_key, database_url)
    await page.get_by_label("Search traces").fill("arrived broken")
    await page.get_by_role("button", name="Filter").click()
    rows = page.get_by_role("table").get_by_role("row")
    await expect(rows).to_have_count(2)  # the header and the trace
    await expect(rows.nth(1)).to_contain_text(USER_TEXT)
    await expect(rows.nth(1)).to_contain_text("error")
    await assert_accessible(page, context="traces, searched")
    await screenshot(page, "traces")

    await rows.nth(1).get_by_role("link", name="invoke_agent support-bot").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("invoke_agent support-bot")
    conversation = page.get_by_role("region", name="Conversation")
    await expect(conversation.get_by_role("listitem").first).to_contain_text(f"user {USER_TEXT}")
    await expect(conversation).to_contain_text(REPLY)
    calls = page.get_by_role("region", name="Tool calls")
    await expect(calls.get_by_role("heading", level=3)).to_have_text(
        ["1. orders.lookup", "2. stripe.refund error"]
    )
    await expect(calls.get_by_role("img").first).to_have_accessible_name(
        "Starts 210 ms into the trace and takes 90 ms, of 900 ms in all "
        "(from 23% to 33% of the bar)."
    )
    await page.get_by_text("as they came, with every attribute").click()
    await expect(page.get_by_role("rowheader", name="custom.team")).to_be_visible()
    await assert_accessible(page, context="trace")
    await screenshot(page, "trace")

    adding = page.get_by_role("region", name="Add to dataset")
    await adding.get_by_label("Dataset").select_option(label="Refunds")
    for_refund = adding.get_by_label("Tool must be called: stripe.refund (critical)")
    await expect(for_refund).to_be_checked()
    await for_refund.uncheck()
    await expect(adding.get_by_label("Use the reply as the expected output")).not_to_be_checked()
    await expect(adding.get_by_label("Expected output", exact=True)).to_have_value(REPLY)
    await adding.get_by_role("button", name="Add to dataset").click()

    await expect(page.get_by_role("status")).to_contain_text("Added 1 test case from the trace")
    await expect(page.get_by_label("Input", exact=True)).to_have_value(USER_TEXT)
    await expect(page.get_by_label("Expected output", exact=True)).to_have_value("")
    first = page.get_by_role("group", name="Check 1: Tool must be called")
    await expect(first.get_by_label("Tool")).to_have_value("orders.lookup")
    order = page.get_by_role("group", name="Check 2: Tools called in this order")
    await expect(order.get_by_label("Tools")).to_have_value("orders.lookup\nstripe.refund")
    await expect(page.get_by_role("group", name="Check 3", exact=False)).to_have_count(0)
    await assert_accessible(page, context="case from a trace")
    await screenshot(page, "case-from-trace")

    await page.get_by_role("link", name=trace_id).click()
    cases = page.get_by_role("region", name="Test cases made from this trace")
    await expect(cases.get_by_role("link")).to_contain_text("in Refunds")

    # Several at once: ticked on the list, each with its own checks on one form.
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Traces").click()
    await page.get_by_label("Select invoke_agent support-bot").check()
    await page.get_by_role("button", name="Add to dataset").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Add to dataset")
    await expect(page.get_by_role("group", name="invoke_agent support-bot")).to_be_visible()
    await assert_accessible(page, context="add several traces")
