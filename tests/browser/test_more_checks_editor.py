"""The checks of contract section 17 in the rubric editor, in Chromium: each written through its
form, kept when saved, refused next to its field when it cannot be used, and graded by Paste a
reply and Preview with each check's detail.

The agent is the fake on 127.0.0.1 (tests/support/fake_agent.py): it answers "I have refunded
order 1234. The money arrives in 3-5 business days." after orders.lookup {"order": 1234} and
stripe.refund {"amount": 20}.
"""

from __future__ import annotations

import json
import re

from playwright.async_api import Locator, Page, expect

from tests.support.browser import assert_accessible, screenshot
from tests.support.fake_agent import FakeAgentServer

TOOLS = [
    {
        "name": "stripe.refund",
        "input_schema": {
            "type": "object",
            "required": ["amount"],
            "properties": {"amount": {"type": "integer", "maximum": 100}},
        },
    }
]
SCHEMA = {"type": "object", "required": ["order_id"], "title": "Receipt"}
ORDER_LINES = 'orders.lookup\nstripe.refund {"amount": 42}'
REPLY = "I have refunded order 1234. The money arrives in 3-5 business days."
# The reply in other letter case: equal only when the case is ignored.
EXPECTED = REPLY.lower()

# Each check's verdict and detail, by product name, for the pasted reply: a JSON receipt after
# stripe.refund of 500.
PASTED = {
    "Output equals": ("failed", f'The reply does not equal "{EXPECTED}"'),
    "Output matches a JSON Schema": ("passed", "The reply matches the schema."),
    "At most N tool calls": (
        "passed",
        "The agent made 1 call of stripe.refund; at most 1 allowed.",
    ),
    "Answered within": ("not graded", "latency was not reported"),
    "Tool arguments are valid": (
        "failed",
        "stripe.refund was called with arguments that are not valid: "
        "$.amount: 500 is greater than the maximum 100.",
    ),
    "Tool must be called": (
        "failed",
        "stripe.refund was called with amount 500; expected 20.",
    ),
    "Tools called in this order": (
        "failed",
        "stripe.refund was called with amount 500; expected 42.",
    ),
}
# And for the fake agent's own answer, called by Preview.
PREVIEWED = {
    "Output equals": ("failed", "Only the letter case differs"),
    "Output matches a JSON Schema": ("failed", "The reply is not valid JSON"),
    "Answered within": ("passed", "within the 20,000 ms allowed"),
    "Tool arguments are valid": (
        "passed",
        "The call of stripe.refund had valid arguments.",
    ),
    "Tool must be called": (
        "passed",
        "stripe.refund was called with the expected arguments.",
    ),
    "Tools called in this order": (
        "failed",
        "stripe.refund was called with amount 20; expected 42.",
    ),
}


def check(page: Page, number: int, name: str) -> Locator:
    return page.get_by_role("group", name=f"Check {number}: {name}")


async def add_check(page: Page, name: str) -> Locator:
    """Add a check of this type at the end; its fieldset."""
    count = await page.get_by_role("group", name="Check ").count()
    await page.get_by_role("button", name="Add check").click()
    await page.get_by_role("button", name=name, exact=True).click()
    added = check(page, count + 1, name)
    await expect(added).to_be_visible()
    await page.wait_for_load_state("domcontentloaded")
    return added


async def register_agent_with_tools(page: Page, agent_url: str) -> None:
    await page.goto("/settings")
    await page.get_by_label("URL").fill(agent_url)
    await page.get_by_label("Tools").fill(json.dumps(TOOLS))
    await page.get_by_role("button", name="Save agent").click()
    await expect(page.get_by_role("status").filter(has_text="Agent saved")).to_be_visible()


async def new_case_editor(page: Page, dataset: str) -> None:
    await page.goto("/datasets")
    await page.get_by_role("button", name="New dataset").click()
    await page.get_by_label("Name").fill(dataset)
    await page.get_by_role("button", name="Create dataset").click()
    await expect(page.get_by_role("heading", name=dataset)).to_be_visible()
    await page.get_by_role("button", name="Add test case").click()


async def write_one_check_of_each_new_type(page: Page) -> None:
    equals = await add_check(page, "Output equals")
    await equals.get_by_label("Expected reply").fill(EXPECTED)
    await equals.get_by_label("Ignore letter case").uncheck()

    schema = await add_check(page, "Output matches a JSON Schema")
    await schema.get_by_label("JSON Schema").fill(json.dumps(SCHEMA))

    most = await add_check(page, "At most N tool calls")
    await most.get_by_label("At most").fill("1")
    await most.get_by_label("Tool (optional)").fill("stripe.refund")

    within = await add_check(page, "Answered within")
    await within.get_by_label("Within (milliseconds)").fill("20000")
    await within.get_by_label("All turns together").check()

    valid = await add_check(page, "Tool arguments are valid")
    await valid.get_by_label("Tool (optional)").fill("stripe.refund")
    await valid.get_by_label("Severity").select_option("Minor")

    called = await add_check(page, "Tool must be called")
    await called.get_by_label("Tool", exact=True).fill("stripe.refund")
    await called.get_by_label("Arguments (optional)").fill('{"amount": 20}')
    await called.get_by_label("Arguments match").select_option("exact")

    order = await add_check(page, "Tools called in this order")
    await order.get_by_label("Tools").fill(ORDER_LINES)


async def expect_the_checks_kept(page: Page) -> None:
    equals = check(page, 1, "Output equals")
    await expect(equals.get_by_label("Expected reply")).to_have_value(EXPECTED)
    await expect(equals.get_by_label("Ignore letter case")).not_to_be_checked()
    await expect(equals.get_by_label("Ignore whitespace around the reply")).to_be_checked()
    schema = check(page, 2, "Output matches a JSON Schema").get_by_label("JSON Schema")
    assert json.loads(await schema.input_value()) == SCHEMA
    most = check(page, 3, "At most N tool calls")
    await expect(most.get_by_label("At most")).to_have_value("1")
    await expect(most.get_by_label("Tool (optional)")).to_have_value("stripe.refund")
    within = check(page, 4, "Answered within")
    await expect(within.get_by_label("Within (milliseconds)")).to_have_value("20000")
    await expect(within.get_by_label("All turns together")).to_be_checked()
    valid = check(page, 5, "Tool arguments are valid")
    await expect(valid.get_by_label("Tool (optional)")).to_have_value("stripe.refund")
    await expect(valid.get_by_label("Severity")).to_have_value("minor")
    called = check(page, 6, "Tool must be called")
    await expect(called.get_by_label("Tool", exact=True)).to_have_value("stripe.refund")
    await expect(called.get_by_label("Arguments (optional)")).to_have_value('{"amount": 20}')
    await expect(called.get_by_label("Arguments match")).to_have_value("exact")
    order = check(page, 7, "Tools called in this order")
    await expect(order.get_by_label("Tools")).to_have_value(ORDER_LINES)


async def expect_details(preview: Locator, details: dict[str, tuple[str, str]]) -> None:
    """Each check's row (by its product name) shows this verdict and detail."""
    rows = preview.get_by_role("row")
    for name, (verdict, detail) in details.items():
        row = rows.filter(has=preview.page.get_by_role("cell", name=name))
        await expect(row).to_contain_text(verdict)
        await expect(row).to_contain_text(detail)


async def expect_refused(field: Locator, words: str) -> None:
    """The field is marked invalid, its error among what it is described by."""
    await expect(field).to_have_attribute("aria-invalid", "true")
    await expect(field).to_have_accessible_description(re.compile(re.escape(words)))


async def test_each_new_check_is_written_kept_and_graded_in_the_editor(
    signed_in_page: Page, fake_agent: FakeAgentServer
) -> None:
    page = signed_in_page
    await register_agent_with_tools(page, fake_agent.url)
    await new_case_editor(page, "More checks")
    await page.get_by_label("Input").fill("Refund order 1234")
    await write_one_check_of_each_new_type(page)
    await assert_accessible(page, context="rubric editor, every new check")
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status")).to_contain_text("Saved as revision 1")
    await page.reload()
    await expect_the_checks_kept(page)
    await assert_accessible(page, context="rubric editor, saved")

    await page.get_by_role("button", name="Paste a reply").click()
    await page.get_by_label("Reply", exact=True).fill('  {"order_id": "1234"} ')
    calls = [{"name": "orders.lookup"}, {"name": "stripe.refund", "arguments": {"amount": 500}}]
    await page.get_by_label("Tool calls").fill(json.dumps(calls))
    await page.get_by_role("button", name="Grade this reply").click()
    pasted = page.get_by_role("region", name="Preview: failed")
    await expect_details(pasted, PASTED)
    await assert_accessible(page, context="rubric editor, pasted reply graded")

    await page.get_by_role("button", name="Preview", exact=True).click()
    live = page.get_by_role("region", name="Preview: failed")
    await expect(live).to_contain_text(REPLY)
    await expect_details(live, PREVIEWED)
    await assert_accessible(page, context="rubric editor, previewed")
    await screenshot(page, "rubric-editor-more-checks")


async def test_a_schema_that_does_not_compile_is_shown_next_to_its_field(
    signed_in_page: Page,
) -> None:
    page = signed_in_page
    await new_case_editor(page, "Bad schema")
    await page.get_by_label("Input").fill("Refund order 1234")
    schema = await add_check(page, "Output matches a JSON Schema")
    await schema.get_by_label("JSON Schema").fill(
        '{"type": "object", "properties": {"a": {"type": "strin"}}}'
    )
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("alert")).to_contain_text("Nothing was saved")
    field = check(page, 1, "Output matches a JSON Schema").get_by_label("JSON Schema")
    await expect(field).to_have_attribute("aria-invalid", "true")
    await expect(field).to_have_accessible_description(re.compile("strin"))
    await assert_accessible(page, context="rubric editor, schema refused")


async def test_a_turns_check_shows_its_error_next_to_its_own_field(signed_in_page: Page) -> None:
    page = signed_in_page
    await new_case_editor(page, "Bad turn checks")
    await page.get_by_role("button", name="Make it a conversation").click()
    turn = page.get_by_role("group", name="Turn 1", exact=True)
    await expect(turn).to_be_visible()
    await page.wait_for_load_state("domcontentloaded")
    await turn.get_by_label("User message").fill("Refund order 1234")
    names = ("Output matches a JSON Schema", "Tool must be called", "Answered within")
    for number, name in enumerate(names, start=1):
        await turn.get_by_role("button", name="Add check to turn 1").click()
        await turn.get_by_role("button", name=name, exact=True).click()
        added = page.get_by_role("group", name=f"Turn 1 check {number}: {name}")
        await expect(added).to_be_visible()
    shape = page.get_by_role("group", name="Turn 1 check 1: Output matches a JSON Schema")
    await shape.get_by_label("JSON Schema").fill('{"type": "strin"}')
    called = page.get_by_role("group", name="Turn 1 check 2: Tool must be called")
    await called.get_by_label("Tool", exact=True).fill("stripe.refund")
    await called.get_by_label("Arguments (optional)").fill('{"amount": {"$regexp": "4"}}')
    within = page.get_by_role("group", name="Turn 1 check 3: Answered within")
    # Past an hour (below 1 the browser itself refuses, by the field's min).
    await within.get_by_label("Within (milliseconds)").fill("2000")
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("alert")).to_contain_text("Nothing was saved")
    # Each error beside the field it is about, as in a case's own checks.
    await expect_refused(
        shape.get_by_label("JSON Schema"),
        'The schema cannot be used at /type: "strin" is not one of',
    )
    await expect_refused(called.get_by_label("Arguments (optional)"), "$regexp is not a matcher")
    await expect(within.get_by_label("Within (milliseconds)")).not_to_have_attribute(
        "aria-invalid", "true"
    )
    # Past an hour (below 1 the browser itself refuses, by the field's min).
    await shape.get_by_label("JSON Schema").fill('{"type": "string"}')
    await called.get_by_label("Arguments (optional)").fill('{"amount": {"$regex": "4"}}')
    await within.get_by_label("Within (milliseconds)").fill("3600001")
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect_refused(within.get_by_label("Within (milliseconds)"), "3600000")
    await assert_accessible(page, context="rubric editor, a turn's checks refused")


async def test_tool_must_not_be_called_asks_only_for_the_tool(signed_in_page: Page) -> None:
    page = signed_in_page
    await new_case_editor(page, "Forbidden tool")
    forbidden = await add_check(page, "Tool must NOT be called")
    await expect(forbidden.get_by_label("Tool", exact=True)).to_be_visible()
    # It matches on the name alone: no arguments to type that would not be kept.
    await expect(forbidden.get_by_label("Arguments (optional)")).to_have_count(0)
    await expect(forbidden.get_by_label("Arguments match")).to_have_count(0)
