"""Dataset Studio and the rubric editor, used as a person uses them, in Chromium.

The agent is a fake on 127.0.0.1 (its replies: tests/support/fake_agent.py) and the AI judge
is the fake Anthropic API; every page is checked with axe-core and screenshotted for review.
"""

from __future__ import annotations

import uuid

import asyncpg
from playwright.async_api import Locator, Page, expect

from agentlasso.services.api_keys import hash_key
from agentlasso.services.web_sessions import create_login_link_token
from tests.support.browser import assert_accessible, screenshot
from tests.support.fake_agent import FakeAgentServer
from tests.support.fake_anthropic import FakeAnthropic, passed

CRITERION = "The reply says when the money arrives."


async def sign_in_by_link(page: Page, database_url: str, api_key: str) -> None:
    """Open the one-time link `agentlasso dev` prints (made here for the key's project), and
    press its button."""
    connection = await asyncpg.connect(database_url)
    try:
        project_id = await connection.fetchval(
            "SELECT project_id FROM api_keys WHERE key_hash = $1", hash_key(api_key)
        )
        token = await create_login_link_token(connection, project_id)
    finally:
        await connection.close()
    await page.goto(f"/login?token={token}")
    await page.get_by_role("button", name="Sign in to").click()
    await expect(page.get_by_role("heading", name="Datasets")).to_be_visible()
    # A link works once.
    await page.context.clear_cookies()
    await page.goto(f"/login?token={token}")
    await expect(page.get_by_role("alert")).to_contain_text("used or has expired")
    await page.goto(f"/login?token={token}&next=/settings")
    await page.get_by_label("API key").fill(api_key)
    await page.get_by_role("button", name="Sign in with API key").click()
    await expect(page.get_by_role("heading", name="Settings")).to_be_visible()


async def register_agent(page: Page, agent_url: str) -> None:
    await page.goto("/settings")
    await assert_accessible(page, context="settings")
    await page.get_by_label("URL").fill(agent_url)
    await page.get_by_label("Headers").fill("Authorization: Bearer sk-agent-secret")
    await page.get_by_role("button", name="Save agent").click()
    await expect(page.get_by_role("status").filter(has_text="Agent saved")).to_be_visible()
    # Write-only: the header's name is shown, never its value.
    await expect(page.get_by_text("authorization")).to_be_visible()
    assert "sk-agent-secret" not in await page.content()
    await page.get_by_role("button", name="Send test message").click()
    answer = page.get_by_role("status").filter(has_text="The agent answered")
    await expect(answer).to_contain_text("I have refunded order 1234")
    await expect(answer).to_contain_text("orders.lookup")
    await screenshot(page, "settings-agent")


def check(page: Page, number: int, name: str) -> Locator:
    return page.get_by_role("group", name=f"Check {number}: {name}")


async def add_check(page: Page, name: str) -> None:
    await page.get_by_role("button", name="Add check").click()
    await page.get_by_role("button", name=name, exact=True).click()


async def test_a_case_written_previewed_and_saved_in_the_browser(
    page: Page,
    api_key: str,
    database_url: str,
    fake_agent: FakeAgentServer,
    fake_anthropic: FakeAnthropic,
) -> None:
    await sign_in_by_link(page, database_url, api_key)
    await register_agent(page, fake_agent.url)

    await page.get_by_role("link", name="Datasets").click()
    await page.get_by_role("button", name="New dataset").click()
    await assert_accessible(page, context="new dataset")
    await page.get_by_label("Name").fill("Refunds")
    await page.get_by_label("Description").fill("Refund questions from real tickets.")
    await page.wait_for_load_state("domcontentloaded")
    await page.get_by_label("Data context").fill('{"region": "eu"')
    await expect(page.get_by_text("Not valid JSON")).to_be_visible()  # as it is typed
    await page.get_by_label("Data context").fill('{"region": "eu"}')
    await page.get_by_role("button", name="Create dataset").click()
    await expect(page.get_by_role("heading", name="Refunds")).to_be_visible()
    await assert_accessible(page, context="dataset, empty")

    await page.get_by_role("button", name="Add test case").click()
    await assert_accessible(page, context="rubric editor, empty")
    await page.get_by_label("Input").fill("Where is my refund for order 1234?")
    await page.get_by_label("Description").fill("A refund question gets the delay.")
    await add_check(page, "Tool must be called")
    await check(page, 1, "Tool must be called").get_by_label("Tool").fill("stripe.refund")
    await add_check(page, "Forbidden in output")
    forbidden = check(page, 2, "Forbidden in output")
    # Focus follows the action: a keyboard user is on the check just added.
    await expect(page.get_by_text("Check 2: Forbidden in output")).to_be_focused()
    await page.wait_for_load_state("domcontentloaded")
    await forbidden.get_by_label("Regular expression").check()
    await forbidden.get_by_label("Text").fill("guarantee(d")
    await expect(forbidden.get_by_text("missing )")).to_be_visible()  # RE2's own error
    await expect(forbidden.get_by_label("Text")).to_have_attribute("aria-invalid", "true")
    await forbidden.get_by_label("Text").fill("guarantee(d)?")
    await expect(forbidden.get_by_text("missing )")).to_be_hidden()
    await expect(forbidden.get_by_label("Text")).to_have_attribute("aria-invalid", "false")
    await add_check(page, "AI judge: meets a criterion")
    await check(page, 3, "AI judge: meets a criterion").get_by_label("Criterion").fill(CRITERION)
    fake_anthropic.when("when the money arrives", passed("It gives 3-5 business days."))

    await page.get_by_role("button", name="Preview").click()
    preview = page.get_by_role("region", name="Preview: passed")
    await expect(preview).to_contain_text("I have refunded order 1234")
    await expect(preview).to_contain_text("stripe.refund")
    rows = preview.get_by_role("row")
    await expect(rows.filter(has_text="Tool must be called")).to_contain_text("passed")
    await expect(rows.filter(has_text="Forbidden in output")).to_contain_text("passed")
    judged = rows.filter(has_text="AI judge: meets a criterion")
    await expect(judged).to_contain_text("passed")
    await expect(judged).to_contain_text("It gives 3-5 business days.")
    await assert_accessible(page, context="rubric editor, previewed")
    await screenshot(page, "rubric-editor-preview")
    sent = fake_agent.requests[-1]
    assert sent["source"] == "agentlasso-preview"
    assert sent["input"] == "Where is my refund for order 1234?"
    assert sent["context"] == {"region": "eu"}

    await page.get_by_role("button", name="Paste a reply").click()
    await page.get_by_label("Reply", exact=True).fill("Refund coming, it is guaranteed!")
    await page.get_by_label("Tool calls").fill('[{"name": "orders.lookup"}]')
    await page.get_by_role("button", name="Grade this reply").click()
    pasted = page.get_by_role("region", name="Preview: failed")
    await expect(pasted.get_by_role("row").filter(has_text="Forbidden in output")).to_contain_text(
        "guaranteed"
    )
    await expect(pasted.get_by_role("row").filter(has_text="Tool must be called")).to_contain_text(
        "stripe.refund was never called"
    )

    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status")).to_contain_text("Saved as revision 1")
    await check(page, 1, "Tool must be called").get_by_label("Severity").select_option("Minor")
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status")).to_contain_text("Saved as revision 2")
    await page.get_by_role("link", name="Revision history").click()
    await expect(page.get_by_role("heading", name="Revision 2")).to_be_visible()
    await expect(page.get_by_text('"severity": "minor"').first).to_be_visible()
    await assert_accessible(page, context="revision history")

    await page.get_by_role("link", name="Refunds").click()
    await expect(
        page.get_by_role("link", name="Where is my refund for order 1234?")
    ).to_be_visible()
    await page.wait_for_load_state("domcontentloaded")  # htmx listens from then on
    await page.get_by_label("Search cases").fill("no such words")
    await expect(page.get_by_text("No test case matches.")).to_be_visible()
    await page.get_by_label("Search cases").fill("REFUND for order")
    await expect(
        page.get_by_role("link", name="Where is my refund for order 1234?")
    ).to_be_visible()
    await assert_accessible(page, context="dataset with a case")


async def test_an_import_with_a_bad_line_names_it_and_saves_nothing(
    signed_in_page: Page, tmp_path: object
) -> None:
    page = signed_in_page
    await page.get_by_role("button", name="New dataset").click()
    await page.get_by_label("Name").fill(f"Imported {uuid.uuid4().hex[:6]}")
    await page.get_by_role("button", name="Create dataset").click()
    await page.get_by_role("button", name="Import").click()
    await assert_accessible(page, context="import")
    lines = (
        '{"input": "one", "checks": [{"type": "output_contains", "value": "a"}]}\n'
        '{"input": "two", "checks": [{"type": "tool_called"}]}\n'
        '{"input": "three"}\n'
    )
    await page.get_by_label("File", exact=True).set_input_files(
        files=[
            {"name": "cases.jsonl", "mimeType": "application/x-ndjson", "buffer": lines.encode()}
        ]
    )
    await page.get_by_role("button", name="Import").click()
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("Nothing was imported")
    await expect(alert).to_contain_text("Line 2")
    await expect(alert).to_contain_text("tool")
    await assert_accessible(page, context="import with errors")
    await page.get_by_role("link", name="Imported").first.click()
    await expect(page.get_by_text("0 test cases · last run")).to_be_visible()

    await page.get_by_role("button", name="Import").click()
    await page.get_by_label("Or paste the file's text").fill(
        lines.replace('[{"type": "tool_called"}]', "[]")
    )
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("status")).to_contain_text("Imported 3 test cases")
    await expect(page.get_by_text("3 test cases · last run")).to_be_visible()
    await expect(page.get_by_role("row")).to_have_count(4)  # the header and three cases


async def test_keys_are_created_shown_once_and_revoked(signed_in_page: Page) -> None:
    page = signed_in_page
    await page.get_by_role("link", name="Settings").click()
    await page.get_by_label("Scope").select_option("read")
    await page.get_by_role("button", name="Create key").click()
    shown = page.get_by_label("Your new API key, of scope read (shown once: copy it now)")
    key = await shown.input_value()
    assert key.startswith("al_")
    await screenshot(page, "settings-new-key")
    prefix = key[:11]
    row = page.get_by_role("row").filter(has_text=prefix)
    await expect(row).to_contain_text("active")
    await expect(row).to_contain_text("read")
    await page.reload()
    await expect(page.get_by_label("Your new API key", exact=False)).to_have_count(0)
    await page.get_by_role("button", name=f"Revoke {prefix}").click()
    await expect(page.get_by_role("row").filter(has_text=prefix)).to_contain_text("revoked")
    await assert_accessible(page, context="settings, keys")
