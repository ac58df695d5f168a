"""Importing another tool's file in Chromium: a promptfoo YAML file is detected, imported, and
the page after says per test what was imported and what was not; a file whose format is not
plain asks for it."""

from __future__ import annotations

import uuid
from pathlib import Path

from playwright.async_api import FilePayload, Page, expect

from tests.support.browser import assert_accessible, screenshot

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "promptfoo"


async def new_dataset(page: Page) -> None:
    await page.get_by_role("button", name="New dataset").click()
    await page.get_by_label("Name").fill(f"From promptfoo {uuid.uuid4().hex[:6]}")
    await page.get_by_role("button", name="Create dataset").click()


async def test_a_promptfoo_file_is_imported_with_a_report_per_test(signed_in_page: Page) -> None:
    page = signed_in_page
    await new_dataset(page)
    await page.get_by_role("button", name="Import").click()
    body = (FIXTURES / "tests_only.yaml").read_bytes()
    upload: FilePayload = {
        "name": "tests_only.yaml",
        "mimeType": "application/yaml",
        "buffer": body,
    }
    await page.get_by_label("File", exact=True).set_input_files(files=[upload])
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("heading", name="Import from promptfoo")).to_be_visible()
    await expect(page.get_by_role("status")).to_contain_text("Imported 2 test cases")
    first = page.locator("#item-1")
    await expect(first.get_by_role("heading")).to_have_text("Test 1: 1 test case")
    await expect(first).to_contain_text(
        "test 1: assert 2 (rouge-n) not imported: no check does what rouge-n does"
    )
    second = page.locator("#item-2")
    await expect(second.get_by_role("heading")).to_have_text("Test 2: not imported")
    await expect(second).to_contain_text(
        "test 2 not imported: it has no vars, and a test case needs an input"
    )
    await expect(second).to_contain_text(
        "test 2: var question not imported: file:// references are not followed"
    )
    await assert_accessible(page, context="import report")
    await screenshot(page, "import-report")
    await page.get_by_role("link", name="Back to").click()
    await expect(page.get_by_text("2 test cases · last run")).to_be_visible()
    await expect(page.get_by_role("link", name="Ada")).to_be_visible()


async def test_a_file_whose_format_is_not_plain_asks_for_it(signed_in_page: Page) -> None:
    page = signed_in_page
    await new_dataset(page)
    await page.get_by_role("button", name="Import").click()
    await assert_accessible(page, context="import form")
    await page.get_by_label("Or paste the file's text").fill('[{"q": "which tool wrote me?"}]')
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("alert")).to_contain_text("Which format is this file?")
    await assert_accessible(page, context="import asking for the format")
    await page.get_by_label("Format").select_option("langfuse")
    await page.get_by_label("Or paste the file's text").fill(
        '[{"input": "Cancel my plan"}, {"expectedOutput": "no input"}]'
    )
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("status")).to_contain_text("Imported 1 test case")
    await expect(page.locator("#item-2")).to_contain_text(
        "item 2 not imported: it has no input, and a test case needs an input"
    )


async def test_a_bad_test_is_named_and_nothing_is_saved(signed_in_page: Page) -> None:
    page = signed_in_page
    await new_dataset(page)
    await page.get_by_role("button", name="Import").click()
    await page.get_by_label("Format").select_option("promptfoo")
    await page.get_by_label("Or paste the file's text").fill(
        "- vars: {q: one}\n- vars: {q: two}\n  assert:\n    - value: no type\n"
    )
    await page.get_by_role("button", name="Import").click()
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("Nothing was imported")
    await expect(alert).to_contain_text("Test 2, /1/assert/0/type: An assert needs a type.")
    await assert_accessible(page, context="import with a bad test")
