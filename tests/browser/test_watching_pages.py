"""Watching production in Chromium: a trace graded by a rule shows the rule's verdict on its
page; the rule's page draws its pass rate by hour (its figures a table, read by role) and lists
the failure; the alert's page shows its state, its history and Send test. axe-core on each
page, in light and dark mode. The traces are read and graded, and the alert evaluated and
delivered, by the workers' own duties, run here in process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import httpx
import msgspec
import pytest_asyncio
from playwright.async_api import Page, expect

from agentlasso.agents import AgentClient
from agentlasso.config import Settings
from agentlasso.db.pool import create_pool
from agentlasso.secrets_box import parse_key
from agentlasso_workers.alert_watch import deliver_due_webhooks, evaluate_due_alerts
from agentlasso_workers.rule_grading import grade_due_traces
from agentlasso_workers.trace_reading import read_waiting_traces
from tests.support.browser import assert_accessible, screenshot
from tests.support.otlp import protobuf_request, refund_conversation
from tests.support.webhook_receiver import SECRET, running_receiver

RULE = {
    "name": "Refunds are confirmed",
    "checks": [
        {"type": "output_contains", "value": "refunded"},
        {"type": "tool_called", "tool": "orders.cancel"},
    ],
}


@pytest_asyncio.fixture
async def workers_here(settings: Settings) -> AsyncIterator[Any]:
    """What the workers' duties use, here in process: traces graded as soon as they arrive."""
    pool = await create_pool(settings.database_url, min_size=1, max_size=4, acquire_timeout_s=10)
    client = AgentClient(max_connections=4, allow_private=True)
    state = SimpleNamespace(
        pool=pool, settings=msgspec.structs.replace(settings, trace_settle_s=0.001),
        judge=None, agent_client=client, secret_key=parse_key(settings.secret_key or ""),
    )  # fmt: skip
    try:
        yield state
    finally:
        await client.aclose()
        await pool.close()


async def graded_and_alerted(base_url: str, api_key: str, state: Any, webhook: str) -> str:
    """A rule and an alert on it, a failing trace sent over OTLP; the trace read, graded, the
    alert evaluated and posted. The trace's id."""
    spans = refund_conversation()
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as http:
        rule = (await http.post("/api/v1/trace-rules", json=RULE)).json()
        alert = await http.post("/api/v1/alerts", json={
            "name": "Refunds failing", "source": {"rule_id": rule["id"]}, "metric": "pass_rate",
            "window_s": 3600, "alert": {"below": 0.9}, "webhook_url": webhook,
            "webhook_secret": SECRET,
        })  # fmt: skip
        assert alert.status_code == 201, alert.text
        sent = await http.post(
            "/v1/traces", content=protobuf_request(spans),
            headers={"content-type": "application/x-protobuf"},
        )  # fmt: skip
        assert sent.status_code == 200, sent.text
    await read_waiting_traces(state.pool)
    await grade_due_traces(state)
    await evaluate_due_alerts(state)
    await deliver_due_webhooks(state)
    return spans[0].trace_id


async def accessible_in_both_schemes(page: Page, context: str) -> None:
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        await assert_accessible(page, context=f"{context}, {scheme}")
    await page.emulate_media(color_scheme="light")


async def test_a_rules_verdict_its_chart_and_its_alert_read_in_the_browser(
    signed_in_page: Page, base_url: str, api_key: str, workers_here: Any
) -> None:
    page = signed_in_page
    with running_receiver() as receiver:
        trace_id = await graded_and_alerted(base_url, api_key, workers_here, receiver.url)
        assert [post.json["state"] for post in receiver.posts] == ["alert"]

        await page.goto(f"{base_url}/traces/{trace_id}")
        section = page.get_by_role("region", name="Trace rules")
        await expect(
            section.get_by_role("heading", name="Refunds are confirmed failed")
        ).to_be_visible()
        checks = section.get_by_role(
            "table", name="The checks of rule Refunds are confirmed with their verdicts"
        )
        await expect(checks.get_by_role("row")).to_have_count(3)
        await expect(checks.get_by_role("row").nth(2)).to_contain_text("orders.cancel")
        await accessible_in_both_schemes(page, "trace with a rule's verdict")

        await page.get_by_role("link", name="Watching").click()
        rules = page.get_by_role("table", name="Trace rules, newest first")
        await expect(rules.get_by_role("row").nth(1)).to_contain_text("0.0%")
        alerts = page.get_by_role("table", name="Alerts, newest first")
        await expect(alerts.get_by_role("row").nth(1)).to_contain_text("alert below 0.9")
        await accessible_in_both_schemes(page, "watching")

        await rules.get_by_role("link", name="Refunds are confirmed").click()
        figure = page.get_by_role("figure", name="Pass rate by hour, last 48 hours")
        await figure.get_by_text("The figures").click()
        hours = page.get_by_role("table", name="Pass rate by hour, last 48 hours")
        await expect(hours.locator("tbody tr")).to_have_count(48)
        await expect(hours.locator("tbody tr").last).to_contain_text("0.0%")
        failures = page.get_by_role("table", name="The rule's latest failed traces, newest first")
        await expect(failures.get_by_role("link", name=trace_id[:12])).to_be_visible()
        await accessible_in_both_schemes(page, "a trace rule")
        await screenshot(page, "trace-rule")

        await page.get_by_role("link", name="Refunds failing").click()
        history = page.get_by_role(
            "table", name="Changes of state, newest first, with each webhook post"
        )
        await expect(history.get_by_role("row").nth(1)).to_contain_text("first: alert")
        await expect(history.get_by_role("row").nth(1)).to_contain_text("delivered")
        await page.get_by_role("button", name="Send test").click()
        await expect(page.get_by_role("status")).to_have_text(
            "The test post was delivered (HTTP 204)."
        )
        await accessible_in_both_schemes(page, "an alert")
        await screenshot(page, "alert")
        assert receiver.posts[-1].headers["X-AgentLasso-Event"] == "alert.test"
        assert receiver.posts[-1].signed
