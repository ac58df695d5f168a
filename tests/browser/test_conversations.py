"""A conversation case used as a person uses it, in Chromium: written turn by turn in the
rubric editor, saved, tried with a pasted transcript, and its failing turn read on the case
card of a CI-mode run. Every page is checked with axe-core and screenshotted for review."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
from playwright.async_api import Page, expect

from tests.support.browser import assert_accessible, screenshot
from tests.support.conversation_results import played, record_conversation

TURNS = [
    ("I want a refund for order 1234.", "Tool must be called", "Tool", "orders.lookup"),
    ("It arrived broken.", "Tool must be called", "Tool", "stripe.refund"),
    ("When will I see the money?", "Output must contain", "Text", "business days"),
]
TRANSCRIPT = """User: I want a refund for order 1234.
Agent: Let me look that up.
Tool calls: [{"name": "orders.lookup", "arguments": {"order": 1234}}]
User: It arrived broken.
Agent: I am sorry to hear that.
User: When will I see the money?
Agent: Within 3-5 business days.
"""


async def write_three_turns(
    page: Page,
    turns: list[tuple[str, str, str, str]] = TURNS,
    description: str = "A refund over three turns",
) -> None:
    """Make the new case a conversation of these turns (the user's message, the check's
    button, its field and value), each with a check of its own."""
    await page.get_by_label("Description").fill(description)
    await page.get_by_role("button", name="Make it a conversation").click()
    for index, (user, check_name, field, value) in enumerate(turns, start=1):
        if index > 1:
            await page.get_by_role("button", name="Add turn").click()
        turn = page.get_by_role("group", name=f"Turn {index}", exact=True)
        await expect(turn).to_be_visible()
        await page.wait_for_load_state("domcontentloaded")
        await turn.get_by_label("User message").fill(user)
        await turn.get_by_role("button", name=f"Add check to turn {index}").click()
        await turn.get_by_role("button", name=check_name, exact=True).click()
        added = page.get_by_role("group", name=f"Turn {index} check 1: {check_name}")
        await expect(added).to_be_visible()
        await added.get_by_label(field, exact=True).fill(value)


async def test_a_conversation_written_pasted_and_read_on_its_case_card(
    signed_in_page: Page, base_url: str, api_key: str, database_url: str
) -> None:
    page = signed_in_page
    await page.get_by_role("link", name="Datasets").click()
    await page.get_by_role("button", name="New dataset").click()
    await page.get_by_label("Name").fill("Conversations")
    await page.get_by_role("button", name="Create dataset").click()
    await page.get_by_role("button", name="Add test case").click()
    await write_three_turns(page)
    await expect(page.get_by_label("Persona")).to_be_visible()
    await expect(page.get_by_label("Max turns")).to_have_value("6")
    await assert_accessible(page, context="rubric editor, a conversation")

    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status")).to_contain_text("Saved as revision 1")
    for index, (user, *_rest) in enumerate(TURNS, start=1):
        turn = page.get_by_role("group", name=f"Turn {index}", exact=True)
        await expect(turn.get_by_label("User message")).to_have_value(user)
    case_id = urlsplit(page.url).path.split("/")[2]

    await page.get_by_role("button", name="Paste a reply").click()
    await page.get_by_label("Transcript").fill(TRANSCRIPT)
    await page.get_by_role("button", name="Grade this conversation").click()
    preview = page.get_by_role("region", name="Preview: failed")
    await expect(preview).to_be_visible()
    turns = preview.locator("li.turn")
    await expect(turns).to_have_count(3)
    await expect(turns.nth(0).get_by_role("row").filter(has_text="orders.lookup")).to_contain_text(
        "passed"
    )
    await expect(turns.nth(1)).to_contain_text("I am sorry to hear that.")
    await expect(turns.nth(1).get_by_role("row").filter(has_text="stripe.refund")).to_contain_text(
        "failed"
    )
    await expect(turns.nth(2).get_by_role("row").filter(has_text="business days")).to_contain_text(
        "passed"
    )
    await expect(preview).to_contain_text("How it ended: The last scripted turn was answered.")
    await assert_accessible(page, context="rubric editor, a pasted conversation graded")
    await screenshot(page, "conversation-pasted")

    run_id = await ci_run_of(base_url, api_key, database_url, case_id)
    await page.goto(f"/runs/{run_id}/cases/{case_id}")
    await expect(
        page.get_by_role("heading", name="A refund over three turns failed")
    ).to_be_visible()
    chat = page.locator("li.turn")
    await expect(chat).to_have_count(3)
    failing = chat.nth(1)
    await expect(failing).to_contain_text("It arrived broken.")
    await expect(failing).to_contain_text("I cannot refund that.")
    await expect(failing.get_by_role("row").filter(has_text="stripe.refund")).to_contain_text(
        "failed"
    )
    await expect(failing).to_contain_text("stripe.refund was never called.")
    await expect(chat.nth(2)).to_contain_text("Simulated user")
    await expect(page.get_by_text("How it ended:")).to_be_visible()
    await assert_accessible(page, context="case card, a conversation")
    await screenshot(page, "conversation-case-card")


async def ci_run_of(base_url: str, api_key: str, database_url: str, case_id: str) -> str:
    """A CI-mode run of the case's dataset whose conversation made no refund at turn 2 (its
    third user message written by the simulated user), stored as a CI client's would be."""
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        case = (await client.get(f"/api/v1/test-cases/{case_id}")).json()
        run = await client.post("/api/v1/eval-runs", json={"dataset_id": case["dataset_id"]})
        assert run.status_code == 201, run.text
    turns = [
        (TURNS[0][0], "Let me look that up.", [{"name": "orders.lookup", "arguments": {}}]),
        (TURNS[1][0], "I cannot refund that.", []),
        (TURNS[2][0], "Within 3-5 business days.", []),
    ]
    run_id: str = run.json()["run_id"]
    await record_conversation(database_url, run_id, case_id, played(turns, scripted=2))
    return run_id


async def test_compare_shows_both_transcripts_turn_by_turn(
    signed_in_page: Page, base_url: str, api_key: str, database_url: str
) -> None:
    page = signed_in_page
    good = [
        (TURNS[0][0], "Let me look that up.", [{"name": "orders.lookup", "arguments": {}}]),
        (TURNS[1][0], "Refunded.", [{"name": "stripe.refund", "arguments": {}}]),
        (TURNS[2][0], "Within 3-5 business days.", []),
    ]
    case = {
        "description": "Compared conversation",
        "conversation": {
            "turns": [
                {"user": user, "checks": [{"type": "tool_called", "tool": tool, "id": f"t{n}"}]}
                for n, (user, _, _, tool) in enumerate(TURNS[:2], start=1)
            ]
            + [{"user": TURNS[2][0]}]
        },
    }
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        dataset = (await client.post("/api/v1/datasets", json={"name": "Compared"})).json()
        created = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
        case_id = created.json()["id"]
        baseline = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset["id"]})
        baseline_id = baseline.json()["run_id"]
        await record_conversation(database_url, baseline_id, case_id, played(good))
        body = {"dataset_id": dataset["id"], "baseline_run_id": baseline_id}
        run_id = (await client.post("/api/v1/eval-runs", json=body)).json()["run_id"]
    worse = [good[0], (TURNS[1][0], "I cannot refund that.", []), good[2]]
    await record_conversation(database_url, run_id, case_id, played(worse))
    await page.goto(f"/runs/{run_id}/compare")
    await page.get_by_text("Both replies and verdicts").click()
    turn_two = page.locator("li.compared-case li.turn").nth(1)
    before = turn_two.get_by_role("group", name="Turn 2 in the baseline")
    after = turn_two.get_by_role("group", name="Turn 2 in this run")
    await expect(before).to_contain_text("Refunded.")
    await expect(before).to_contain_text("passed")
    await expect(after).to_contain_text("I cannot refund that.")
    await expect(after).to_contain_text("failed")
    await assert_accessible(page, context="compare, a conversation")
    await screenshot(page, "conversation-compare")
