"""Browser-test helpers: the page guard, the accessibility check, screenshots, page weight.

Pages are driven with Playwright's async API in the test's own event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, ConsoleMessage, Page, Request, Response, Route

AXE_SCRIPT = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"
SCREENSHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
FAILING_IMPACTS = ("serious", "critical")
WEIGHED_RESOURCE_TYPES = ("document", "script", "stylesheet")


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@dataclass
class PageGuard:
    """What the pages of one browser context tried that a browser test forbids."""

    origin: str
    other_origin_requests: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)

    async def install(self, context: BrowserContext) -> None:
        """Abort and record other-origin requests; record what the page's CSP refused."""
        await context.route("**/*", self._route)
        context.on("console", self._console)

    def assert_clean(self) -> None:
        """Fail if anything was recorded."""
        assert self.other_origin_requests == [], (
            f"no request to any other origin than {self.origin}: {self.other_origin_requests}"
        )
        assert self.csp_violations == [], f"the page's CSP refused: {self.csp_violations}"

    async def _route(self, route: Route) -> None:
        url = route.request.url
        if origin_of(url) == self.origin:
            await route.continue_()
            return
        self.other_origin_requests.append(url)
        await route.abort("blockedbyclient")

    def _console(self, message: ConsoleMessage) -> None:
        # Chromium reports a CSP refusal only as a console error; the page just breaks quietly.
        if message.type == "error" and "Content Security Policy" in message.text:
            self.csp_violations.append(message.text)


async def assert_accessible(page: Page, *, context: str = "") -> None:
    """Fail listing every serious or critical axe-core violation on the page as it is now."""
    if not await page.evaluate("typeof window.axe === 'object'"):
        # Evaluated over DevTools, which the app's CSP does not govern (an injected <script>
        # tag is refused), so browser tests keep the CSP the app really sends.
        await page.evaluate(AXE_SCRIPT.read_text(encoding="utf-8"))
    results = await page.evaluate('axe.run(document, {resultTypes: ["violations"]})')
    failing = [v for v in results["violations"] if v["impact"] in FAILING_IMPACTS]
    where = f" ({context})" if context else ""
    assert not failing, f"accessibility violations on {page.url}{where}:\n" + "\n".join(
        describe_violation(v) for v in failing
    )


def describe_violation(violation: dict[str, Any]) -> str:
    """One line: impact, rule id, help text, the first three elements it found."""
    targets = [" ".join(map(str, node["target"])) for node in violation["nodes"][:3]]
    more = len(violation["nodes"]) - len(targets)
    listed = ", ".join(targets) + (f" and {more} more" if more > 0 else "")
    return f"- {violation['impact']} {violation['id']}: {violation['help']} [{listed}]"


async def screenshot(page: Page, name: str) -> Path:
    """Save a full-page PNG under tests/artifacts/screenshots/ for reviewers; return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    # caret="initial": hiding the caret would inject a <style>, which the app's CSP refuses.
    await page.screenshot(path=path, full_page=True, caret="initial")
    return path


@dataclass(frozen=True)
class PageWeight:
    """Uncompressed bytes a page loaded from its own origin, and what it asked of any other."""

    total_bytes: int
    bytes_by_url: dict[str, int]
    other_origin_requests: list[str]


async def page_weight(page: Page, path: str) -> PageWeight:
    """Go to `path`; weigh its document and every same-origin script and stylesheet it loaded."""
    responses: list[Response] = []
    requested: list[str] = []

    def on_response(response: Response) -> None:
        responses.append(response)

    def on_request(request: Request) -> None:
        if urlsplit(request.url).scheme in ("http", "https"):  # not data: or blob:
            requested.append(request.url)

    page.on("response", on_response)
    page.on("request", on_request)
    try:
        document = await page.goto(path)
    finally:
        page.remove_listener("response", on_response)
        page.remove_listener("request", on_request)
    assert document is not None, f"no response for {path}"
    origin = origin_of(document.url)
    bytes_by_url: dict[str, int] = {}
    for response in responses:
        if counts_toward_weight(response, origin):
            bytes_by_url[response.url] = len(await response.body())
    other = [url for url in requested if origin_of(url) != origin]
    return PageWeight(sum(bytes_by_url.values()), bytes_by_url, other)


def counts_toward_weight(response: Response, origin: str) -> bool:
    """A same-origin document, script or stylesheet that has a body (a redirect has none)."""
    return (
        response.request.resource_type in WEIGHED_RESOURCE_TYPES
        and origin_of(response.url) == origin
        and not 300 <= response.status < 400
    )
