"""The review loop in Chromium (contract section 15), with real worker processes judging through
the fake Anthropic: a criterion whose judge is wrong on a known subset, its run sent to review,
every item labelled from the keyboard with Save and next, Judge agreement showing the kappa and
the disagreements, two of them made examples, and a CI-mode re-run whose judge is asked afresh
for those two cases with the examples in its prompt."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Page, expect
from sklearn.metrics import cohen_kappa_score

from agentlasso.config import Settings
from tests.support.browser import assert_accessible, screenshot
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.judged_runs import (
    CRITERION,
    RIGHT,
    SHORT,
    WRONGLY_FAILED,
    ci_run_of,
    judged_run,
    judging_platform,
)

REPLIES = [RIGHT, RIGHT, SHORT, WRONGLY_FAILED, WRONGLY_FAILED]
NOTE = "It states 20 EUR: the criterion is met."


@pytest.fixture(scope="module")
def judging(settings: Settings) -> Iterator[tuple[str, FakeAnthropic]]:
    """An API process and worker processes whose judge is the fake Anthropic, for the module."""
    with judging_platform(settings) as platform:
        yield platform


@pytest.fixture
def base_url(judging: tuple[str, FakeAnthropic]) -> str:
    """Chromium and the test's API client both call the judging API process."""
    return judging[0]


@pytest_asyncio.fixture
async def api(base_url: str, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    """The API, as the signed-in page's project."""
    async with httpx.AsyncClient(
        base_url=base_url, headers={"x-api-key": api_key}, timeout=60
    ) as http:
        yield http


def people_pass(reply: str) -> bool:
    """What the people know: a reply with the amount meets the criterion."""
    return "20 EUR" in reply


async def label_from_the_keyboard(page: Page) -> None:
    """Label the item on screen with keys alone: the form opens focused on the judge's verdict,
    arrows pick within a group, Tab moves on, Enter saves."""
    reply = (
        await page.get_by_role("region", name="The agent's reply").locator("pre.reply").inner_text()
    )
    judge_failed = await page.get_by_role("group", name=re.compile("the judge said failed")).count()
    agree = people_pass(reply) != bool(judge_failed)
    await expect(page.get_by_role("radio", name="Agree", exact=True)).to_be_focused()
    await page.keyboard.press("Space" if agree else "ArrowRight")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("radio", name="Passes", exact=True)).to_be_focused()
    await page.keyboard.press("Space" if people_pass(reply) else "ArrowRight")
    await page.keyboard.press("Tab")
    await expect(page.get_by_label("Note", exact=True)).to_be_focused()
    if not agree:
        await page.keyboard.type(NOTE)
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Save and next")).to_be_focused()
    async with page.expect_navigation():
        await page.keyboard.press("Enter")


async def send_the_run_to_review_and_label_it(page: Page, run_id: str) -> None:
    """From the run's page: Send to review, the queue, then every item with Save and next."""
    await page.goto(f"/runs/{run_id}")
    await page.get_by_label("Send to review", exact=True).select_option("all")
    await page.get_by_role("button", name="Send to review").click()
    await expect(page.get_by_role("status").filter(has_text="joined")).to_contain_text(
        "5 results joined the review queue"
    )
    await assert_accessible(page, context="run page with Send to review")
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Review").click()
    await expect(page.get_by_text("5 pending · 0 done")).to_be_visible()
    await assert_accessible(page, context="review queue")

    await page.get_by_role("link", name=re.compile("^Result of case")).first.click()
    await assert_accessible(page, context="review item")
    await screenshot(page, "review-item")
    for _ in REPLIES:
        await label_from_the_keyboard(page)
    await expect(page).to_have_url(re.compile(r"/review\?finished=1$"))
    await expect(page.get_by_text("0 pending · 5 done")).to_be_visible()


async def make_two_disagreements_examples(page: Page, dataset_id: str) -> None:
    """Judge agreement from the dataset's page: the kappa, the two disagreements a click away,
    each made an example."""
    await page.goto(f"/datasets/{dataset_id}")
    await page.get_by_role("link", name="Judge agreement").click()
    people = ["passed" if people_pass(reply) else "failed" for reply in REPLIES]
    judge = ["failed" if reply in (SHORT, WRONGLY_FAILED) else "passed" for reply in REPLIES]
    kappa = cohen_kappa_score(people, judge)
    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name=CRITERION))
    await expect(row).to_contain_text(f"{kappa:.2f} (")
    await expect(row).to_contain_text("judge failed, people passed 2")
    await assert_accessible(page, context="judge agreement")
    await row.get_by_role("link", name="2 disagreements").click()
    differing = page.get_by_role("region", name=re.compile("^Disagreements"))
    await expect(differing.get_by_role("row")).to_have_count(3)
    await expect(differing).to_contain_text(NOTE)
    await screenshot(page, "judge-agreement-disagreements")

    for made in (1, 2):
        await page.get_by_role("button", name="Make an example").first.click()
        await expect(page.get_by_role("status")).to_contain_text("the judge will see the example")
        await expect(page.get_by_role("button", name="Make an example")).to_have_count(2 - made)
    await assert_accessible(page, context="judge agreement after two examples")


async def test_people_label_from_the_keyboard_and_their_disagreements_calibrate_the_judge(
    signed_in_page: Page, api: httpx.AsyncClient, judging: tuple[str, FakeAnthropic]
) -> None:
    page, anthropic = signed_in_page, judging[1]
    dataset_id, run_id, case_ids = await judged_run(api, REPLIES)
    await send_the_run_to_review_and_label_it(page, run_id)
    await make_two_disagreements_examples(page, dataset_id)

    asked_before = len(anthropic.requests)
    again = await ci_run_of(api, dataset_id, dict(zip(case_ids, REPLIES, strict=True)))
    assert (again["judge"]["calls"], again["judge"]["cached"]) == (2, 3)
    prompts = [request.prompt_text for request in anthropic.requests[asked_before:]]
    assert len(prompts) == 2
    for prompt in prompts:
        assert "<criterion_examples>" in prompt and NOTE in prompt

    # The calibrated case's card: a fresh judge call; an unchanged case's: from the cache.
    calibrated, unchanged = case_ids[3], case_ids[0]
    await page.goto(f"/runs/{again['run_id']}/cases/{calibrated}")
    await expect(page.get_by_text("answered from the cache")).to_have_count(0)
    await page.goto(f"/runs/{again['run_id']}/cases/{unchanged}")
    await expect(page.get_by_text("answered from the cache")).to_have_count(1)
