"""Compare in Chromium: from a run's page to its comparison with the baseline, where the new
failure comes first and opens both replies side by side; axe-core on each page."""

from __future__ import annotations

from typing import Any

import httpx
from playwright.async_api import Page, expect

from tests.support.api import create_dataset
from tests.support.browser import assert_accessible, screenshot

SAYS_DELAY = {"type": "output_contains", "value": "3-5 business days", "id": "delay"}
GOOD = "Your refund arrives in 3-5 business days."
BAD = "Your refund arrives soon."


async def ci_run(client: httpx.AsyncClient, dataset_id: str, replies: dict[str, str]) -> str:
    """A finished CI-mode run whose cases (by description) get these replies; its id."""
    created = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})
    assert created.status_code == 201, created.text
    run: dict[str, Any] = created.json()
    ids = {case["input"]: case["test_case_id"] for case in run["test_cases"]}
    results = [
        {"test_case_id": ids[f"refund {name}"], "actual_output": reply,
         "actual_tool_calls": [{"name": "lookup", "arguments": {"order": 1}}]}
        for name, reply in replies.items()
    ]  # fmt: skip
    posted = await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
    )
    assert posted.status_code == 200, posted.text
    return str(run["run_id"])


async def test_compare_puts_the_new_failure_first_with_both_replies_side_by_side(
    signed_in_page: Page, base_url: str, api_key: str
) -> None:
    page = signed_in_page
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        dataset = await create_dataset(client, name="Refund replies")
        for name in ("A steady case", "A refund that broke"):
            created = await client.post(
                f"/api/v1/datasets/{dataset['id']}/test-cases",
                json={"input": f"refund {name}", "description": name, "checks": [SAYS_DELAY]},
            )
            assert created.status_code == 201, created.text
        await ci_run(client, dataset["id"], {"A steady case": GOOD, "A refund that broke": GOOD})
        run_id = await ci_run(
            client, dataset["id"], {"A steady case": GOOD, "A refund that broke": BAD}
        )

    await page.goto(f"/runs/{run_id}")
    await expect(page.get_by_role("link", name="the run this one is compared with")).to_be_visible()
    await page.get_by_role("button", name="Compare").click()
    await expect(page.get_by_role("heading", level=1)).to_contain_text("Compare")
    buckets = page.get_by_role("navigation", name="Buckets")
    await expect(buckets.get_by_role("link", name="New failures (1)")).to_be_visible()
    cases = page.get_by_role("heading", level=3)
    await expect(cases.first).to_have_text("A refund that broke")
    await expect(cases.nth(1)).to_have_text("A steady case")
    await assert_accessible(page, context="compare")

    await page.get_by_text("Both replies and verdicts").first.click()
    before = page.get_by_role("region", name="In the baseline: A refund that broke")
    after = page.get_by_role("region", name="In this run: A refund that broke")
    await expect(before.locator("pre.reply")).to_have_text(GOOD)
    await expect(after.locator("pre.reply")).to_have_text(BAD)
    await expect(before).to_contain_text("passed")
    await expect(after).to_contain_text("failed")
    box_before, box_after = await before.bounding_box(), await after.bounding_box()
    assert box_before and box_after and box_before["x"] < box_after["x"], "side by side"
    assert abs(box_before["y"] - box_after["y"]) < 1
    await expect(page.locator("pre.word-diff del").first).to_contain_text("in 3-5 business days.")
    await expect(page.locator("pre.word-diff ins").first).to_contain_text("soon.")
    await assert_accessible(page, context="compare, a case opened")
    await screenshot(page, "compare")

    await page.get_by_role("link", name="New failures (1)").click()
    await expect(page.get_by_role("heading", level=3)).to_have_text(["A refund that broke"])
    await assert_accessible(page, context="compare, new failures")

    # The dataset's page loads its flaky cases after itself: the case that flipped is there.
    await page.goto(f"/datasets/{dataset['id']}")
    flaky = page.get_by_role("region", name="Flaky cases")
    await expect(flaky.get_by_role("link", name="A refund that broke")).to_be_visible()
    await expect(flaky.get_by_role("row").filter(has_text="A refund that broke")).to_contain_text(
        "50.0%"
    )
    await assert_accessible(page, context="dataset page with its flaky cases")
