"""A CI-mode run posted by the product document's own Node client (the script the seed ships),
read in Chromium: the failing case's card shows the reply, with the forbidden text marked,
beside the failed check's detail, and the expected output diffed against the reply."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Locator, Page, expect

from tests.support.browser import assert_accessible, screenshot
from tests.support.fake_agent import PROMISE_REPLY, FakeAgentServer

EXAMPLE_CLIENT = Path(__file__).parents[1] / "e2e" / "example_client" / "run-eval.mjs"
EXPECTED = "I have refunded order 1234. The money arrives in 3-5 business days."
CHECKS = [
    {"type": "tool_called", "tool": "stripe.refund", "id": "refunded"},
    {"type": "output_contains", "value": "3-5 business days", "id": "delay"},
    {"type": "output_not_contains", "value": "guarantee", "id": "no-promise"},
]


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    """`agentlasso api` in a process of its own: the Node client and Chromium both call it."""
    return api_process_url


async def dataset_for_the_node_client(base_url: str, api_key: str) -> str:
    """A dataset the fake agent passes on `refund` and fails on `promise`; its id."""
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        dataset = (await client.post("/api/v1/datasets", json={"name": "Node client"})).json()
        for text in ("refund 1", "promise 2"):
            case = {
                "input": text,
                "description": text,
                "expected_output": EXPECTED,
                "checks": CHECKS,
            }
            created = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
            assert created.status_code == 201, created.text
    return str(dataset["id"])


async def run_the_node_client(
    base_url: str, api_key: str, dataset_id: str, agent_url: str, folder: Path
) -> tuple[int, str]:
    """The example client, unchanged but for its base URL; its exit code and output."""
    script = folder / "run-eval.mjs"
    original = EXAMPLE_CLIENT.read_text()
    script.write_text(original.replace("https://agentlasso.dev/api/v1", f"{base_url}/api/v1"))
    env = {**os.environ, "AGENTLASSO_API_KEY": api_key, "AGENTLASSO_DATASET_ID": dataset_id,
           "AGENT_ENDPOINT": agent_url}  # fmt: skip
    # Not subprocess.run: the fake agent answers from a thread, but nothing here may block the
    # test's event loop while the script runs.
    node = await asyncio.create_subprocess_exec(
        "node",
        str(script),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(node.communicate(), timeout=60)
    return node.returncode or 0, output.decode()


async def test_a_run_posted_by_the_node_client_shows_the_reply_beside_the_failed_check(
    signed_in_page: Page, base_url: str, api_key: str, fake_agent: FakeAgentServer, tmp_path: Path
) -> None:
    page = signed_in_page
    dataset_id = await dataset_for_the_node_client(base_url, api_key)
    code, output = await run_the_node_client(
        base_url, api_key, dataset_id, fake_agent.url, tmp_path
    )
    assert code == 1 and "FAIL" in output, output

    await page.get_by_role("link", name="Test Runs").click()
    await page.get_by_role("row").nth(1).get_by_role("link").click()
    await expect(page.get_by_role("heading", name="Run of Node client")).to_contain_text(
        "gate failed"
    )
    await page.get_by_role("link", name="promise 2").click()

    await expect(page.get_by_role("heading", level=1)).to_contain_text("promise 2 failed")
    checks = page.get_by_role("table", name="Every check of the case with its verdict and detail")
    forbidden = checks.get_by_role("row").filter(has_text="Forbidden in output")
    await expect(forbidden).to_contain_text("failed")
    await expect(forbidden).to_contain_text(
        'Forbidden "guarantee" found: Refund coming, I guarantee'
    )
    reply = page.get_by_role("region", name="The agent's reply").locator("pre.reply")
    await expect(reply).to_have_text(PROMISE_REPLY["output"])
    await expect(reply.locator("mark")).to_have_text("guarantee")
    await expect_beside(page, reply, forbidden)

    # Words read as removed or added, not by colour alone: screen readers hear which is which.
    diff = page.locator("pre.word-diff")
    await expect(diff.locator("del")).to_contain_text("removed: have refunded order 1234.")
    await expect(diff.locator("ins").last).to_contain_text("added: guarantee it!")
    await assert_accessible(page, context="case card of a Node client's run")
    await screenshot(page, "case-card-node-client")


async def expect_beside(page: Page, reply: Locator, check: Locator) -> None:
    """The reply and the check's row sit in columns side by side, both on the screen at once."""
    reply_box, check_box = await reply.bounding_box(), await check.bounding_box()
    assert reply_box is not None and check_box is not None
    assert reply_box["x"] + reply_box["width"] <= check_box["x"], (reply_box, check_box)
    viewport = page.viewport_size
    assert viewport is not None
    assert max(reply_box["y"], check_box["y"]) < viewport["height"], "both seen without scrolling"
