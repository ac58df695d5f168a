"""Tags and dataset versions in Chromium: tag a case in the rubric editor, filter the dataset by
its tag, freeze a version, edit the case, run the version with real workers and see that the
frozen revision is what ran. axe-core on each page."""

from __future__ import annotations

import re

import httpx
from playwright.async_api import Page, expect

from tests.support.api import CHECKS, register_agent
from tests.support.browser import assert_accessible, screenshot
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import WorkerProcesses

RUN_TIMEOUT_MS = 60_000


async def seed(base_url: str, api_key: str, agent_url: str) -> None:
    """A dataset of two refund questions, and the fake agent registered as the project's."""
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        await register_agent(client, agent_url)
        dataset = (await client.post("/api/v1/datasets", json={"name": "Refunds"})).json()
        for number, description in ((1, "first refund"), (2, "second refund")):
            body = {"input": f"refund {number}", "description": description, "checks": CHECKS}
            created = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=body)
            assert created.status_code == 201, created.text


async def test_a_frozen_version_runs_the_revision_it_froze(
    signed_in_page: Page,
    base_url: str,
    api_key: str,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
) -> None:
    page = signed_in_page
    await seed(base_url, api_key, fake_agent.url)
    workers.start()

    # Tag the first case in the rubric editor.
    await page.get_by_role("link", name="Datasets").click()
    await page.get_by_role("link", name="Refunds").click()
    await page.get_by_role("link", name="refund 1").click()
    await page.get_by_label("Tags").fill("smoke, billing")
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status")).to_contain_text("Saved as revision 2")
    await assert_accessible(page, context="rubric editor with tags")

    # The dataset lists it with its tags; a tag's chip filters the cases by it, in the URL.
    await page.get_by_role("link", name="Refunds").click()
    cases = page.get_by_role("table", name="Test cases")
    await expect(cases.get_by_role("row").filter(has_text="first refund")).to_contain_text("smoke")
    await cases.get_by_role("link", name="Only cases tagged smoke").click()
    await expect(page).to_have_url(re.compile(r"[?&]tag=smoke"))
    await expect(page.get_by_label("Tag", exact=True)).to_have_value("smoke")
    filtered = page.get_by_role("table", name="Test cases matching the filters")
    await expect(filtered.get_by_role("row")).to_have_count(2)  # the header and the case
    await expect(filtered).to_contain_text("first refund")
    await assert_accessible(page, context="dataset filtered by tag")

    # Freeze a version, then edit the tagged case into one the agent fails.
    await page.get_by_label("Version name").fill("v1")
    await page.get_by_role("button", name="Freeze version").click()
    await expect(page.get_by_role("status").filter(has_text="Version frozen")).to_be_visible()
    versions = page.get_by_role("table", name="The dataset's versions, newest first")
    await expect(versions.get_by_role("row").filter(has_text="v1")).to_contain_text("2")
    await assert_accessible(page, context="dataset with a version")
    await screenshot(page, "dataset-versions")
    await page.get_by_role("link", name="refund 1").click()
    await page.get_by_label("Input", exact=True).fill("promise 1, edited")
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status")).to_contain_text("Saved as revision 3")

    # Run the version, only its smoke cases: the frozen revision is the one the agent is sent.
    await page.get_by_role("link", name="Refunds").click()
    await page.get_by_role("button", name="Run version v1").click()
    await expect(page.get_by_label("Dataset version")).to_contain_text("v1 (2 cases")
    await page.get_by_label("Tags").fill("smoke")
    await assert_accessible(page, context="start a run of a version")
    await page.get_by_role("button", name="Start run").click()
    heading = page.get_by_role("heading", level=1)
    await expect(heading).to_contain_text("gate passed", timeout=RUN_TIMEOUT_MS)
    summary = page.get_by_role("region", name="Summary")
    await expect(summary).to_contain_text("version v1 of the dataset")
    await expect(summary).to_contain_text("only those tagged smoke")
    await expect(summary).to_contain_text("1 of 1 in: 1 passed")
    await assert_accessible(page, context="a run of a version")
    assert [request["input"] for request in fake_agent.requests[-1:]] == ["refund 1"]
    await page.get_by_role("link", name="first refund").click()
    await expect(page.get_by_role("region", name="Input")).to_contain_text("refund 1")
    await assert_accessible(page, context="the frozen case's card")
