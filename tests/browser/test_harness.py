"""The browser harness itself: the accessibility check, the page guard, page weight."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest
from playwright.async_api import Page, Route

from tests.support.browser import PageGuard, assert_accessible, page_weight, screenshot

# A strict policy like the app's: axe must run under it without loosening it.
STRICT_CSP = """<meta http-equiv="Content-Security-Policy" content="default-src 'self'">"""


def html(body: str, head: str = STRICT_CSP) -> str:
    return f'<!doctype html><html lang="en"><head>{head}<title>Runs</title></head><body>{body}'


async def test_an_accessible_page_passes(page: Page) -> None:
    await page.set_content(
        html('<main><h1>Runs</h1><label for="q">Search</label><input id="q"><button>Go</button>')
    )
    await assert_accessible(page, context="a labelled form")


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ('<main><a href="/runs"><img src="/logo.png"></a></main>', "image-alt"),
        ('<main><a href="/runs"><img src="/logo.png"></a></main>', "link-name"),
        ('<main><input type="text"></main>', "label"),
    ],
    ids=["image without alt", "link without text", "input without label"],
)
async def test_an_inaccessible_page_fails_naming_the_rule(page: Page, body: str, rule: str) -> None:
    await page.set_content(html(body, head=""))
    with pytest.raises(AssertionError, match=rf"(serious|critical) {rule}: "):
        await assert_accessible(page)


async def test_a_request_to_another_origin_is_blocked_and_recorded(
    page: Page, page_guard: PageGuard
) -> None:
    await page.set_content(html('<script src="http://example.invalid/x.js"></script>', head=""))
    assert page_guard.other_origin_requests == ["http://example.invalid/x.js"]
    page_guard.other_origin_requests.clear()  # seen; the fixture would fail the test otherwise


async def test_a_csp_refusal_is_recorded(page: Page, page_guard: PageGuard) -> None:
    await page.set_content(html("<script>window.ran = true</script>"))
    assert await page.evaluate("window.ran") is None
    assert len(page_guard.csp_violations) == 1
    page_guard.csp_violations.clear()


async def test_page_weight_counts_the_document(
    page: Page, base_url: str, anonymous: httpx.AsyncClient
) -> None:
    expected = (await anonymous.get("/health")).content
    weight = await page_weight(page, "/health")
    assert weight.bytes_by_url == {f"{base_url}/health": len(expected)}
    assert weight.total_bytes == len(expected)
    assert weight.other_origin_requests == []


async def test_page_weight_counts_same_origin_scripts_and_stylesheets_only(
    page: Page, base_url: str, page_guard: PageGuard
) -> None:
    document = html(
        '<link rel="stylesheet" href="/s.css"><script src="/s.js"></script>'
        '<script src="http://example.invalid/x.js"></script><img alt="logo" src="/i.png">',
        head="",
    )
    bodies = {"/page": document, "/s.css": "body{}", "/s.js": "let s=1;", "/i.png": "png"}

    async def serve(route: Route) -> None:
        await route.fulfill(body=bodies[urlsplit(route.request.url).path])

    await page.route(f"{base_url}/*", serve)  # page routes run before the guard's
    weight = await page_weight(page, "/page")
    assert weight.total_bytes == len(document) + len("body{}") + len("let s=1;")
    assert weight.other_origin_requests == ["http://example.invalid/x.js"]
    page_guard.other_origin_requests.clear()


async def test_a_screenshot_is_a_png_under_the_artifacts_folder(page: Page) -> None:
    await page.set_content(html("<main><h1>Runs</h1></main>"))
    path = await screenshot(page, "harness-self-test")
    try:
        assert path.read_bytes().startswith(b"\x89PNG")
        assert path.parent.parts[-2:] == ("artifacts", "screenshots")
    finally:
        path.unlink()
