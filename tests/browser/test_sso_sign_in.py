"""Signing in with SSO in Chromium, through a real OpenID Provider (npm `oidc-provider` 9.x,
its development login and consent pages): a verified email in an allowed domain lands in the
app as a viewer; an unverified one, another domain and a replayed callback each get a page
that says so. (Token-level refusals: tests/integration/test_sso_tokens.py.)"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import asyncpg
import msgspec
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, Route, expect

from agentlasso.config import Settings
from agentlasso.server import create_app
from agentlasso.services import sso
from agentlasso.services.api_keys import create_key_for_project_name
from tests.support import oidc_provider
from tests.support.browser import assert_accessible, origin_of, screenshot
from tests.support.servers import free_socket, serving


@pytest.fixture(scope="module")
def app_socket() -> Iterator[object]:
    """The app's socket, bound first: the provider must know the redirect URI before it starts."""
    sock = free_socket()
    yield sock
    sock.close()


@pytest.fixture(scope="module")
def issuer(app_socket: object) -> Iterator[str]:
    """oidc-provider on loopback; missing, a skip, or a failure where CI requires it."""
    port = app_socket.getsockname()[1]  # type: ignore[attr-defined]
    try:
        with oidc_provider.running_provider(f"http://127.0.0.1:{port}/login/sso/callback") as url:
            yield url
    except oidc_provider.OidcProviderMissing as exc:
        if os.environ.get("AGENTLASSO_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{exc} (AGENTLASSO_REQUIRE_BROWSER=1 makes this a failure)")
        pytest.skip(f"oidc-provider is not available here: {exc}")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def organisation(database_url: str) -> str:
    name = f"sso-browser-{uuid.uuid4().hex[:10]}"
    await create_key_for_project_name(database_url, name)
    return name


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def app_url(
    settings: Settings, issuer: str, organisation: str, app_socket: object
) -> AsyncIterator[str]:
    configured = msgspec.structs.replace(
        settings, oidc_issuer=issuer, oidc_client_id=oidc_provider.CLIENT_ID,
        oidc_client_secret=oidc_provider.CLIENT_SECRET,
        oidc_allowed_domains=(oidc_provider.ALLOWED_DOMAIN,), oidc_organisation=organisation,
    )  # fmt: skip
    async with serving(create_app(configured), app_socket) as url:  # type: ignore[arg-type]
        yield url


@pytest_asyncio.fixture(loop_scope="session")
async def sso_page(browser: Browser, app_url: str, issuer: str) -> AsyncIterator[Page]:
    """A page on the app that may reach the app and the provider, and nothing else (the
    provider's own dev pages ask for web fonts: refused, but only the app's pages are held to
    asking for nothing beyond)."""
    context = await browser.new_context(base_url=app_url)
    allowed = {origin_of(app_url), origin_of(issuer)}
    elsewhere: list[str] = []

    async def only_ours(route: Route) -> None:
        if origin_of(route.request.url) in allowed:
            await route.continue_()
            return
        if origin_of(route.request.frame.url) == origin_of(app_url):
            elsewhere.append(route.request.url)
        await route.abort("blockedbyclient")

    await context.route("**/*", only_ours)
    try:
        yield await context.new_page()
    finally:
        await context.close()
    assert elsewhere == [], f"no request beyond the app and the provider: {elsewhere}"


async def sign_in_at_provider(page: Page, account: str) -> None:
    """From /login, through the provider's dev login and consent pages."""
    await page.goto("/login")
    await page.get_by_role("link", name="Sign in with SSO").click()
    await page.locator("input[name=login]").fill(account)
    await page.locator("input[name=password]").fill("any password")
    await page.get_by_role("button", name="Sign-in").click()
    await page.get_by_role("button", name="Continue").click()


async def test_a_verified_allowed_email_signs_in_as_a_viewer(
    sso_page: Page, database_url: str, organisation: str
) -> None:
    callbacks: list[str] = []
    sso_page.on(
        "request",
        lambda request: callbacks.append(request.url) if "/login/sso/callback" in request.url
        else None,
    )  # fmt: skip
    await sign_in_at_provider(sso_page, oidc_provider.VERIFIED)
    await expect(sso_page.get_by_role("heading", name="Datasets")).to_be_visible()
    await expect(sso_page.get_by_text("Role: viewer")).to_be_visible()
    await screenshot(sso_page, "sso-signed-in")
    connection = await asyncpg.connect(database_url)
    try:
        role = await connection.fetchval(
            "SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id"
            " JOIN organisations o ON o.id = m.organisation_id WHERE u.email = $1 AND o.name = $2",
            "alice@allowed.example", organisation,
        )  # fmt: skip
    finally:
        await connection.close()
    assert role == "viewer"

    # The same callback again (its state spent): refused, with a page that says so.
    await sso_page.goto(callbacks[-1])
    await expect(sso_page.get_by_role("alert")).to_have_text(sso.MESSAGES["unknown_state"])
    await assert_accessible(sso_page, context="sso refused, replayed state")


@pytest.mark.parametrize(
    ("account", "reason"),
    [
        (oidc_provider.UNVERIFIED, "unverified_email"),
        (oidc_provider.OTHER_DOMAIN, "domain_not_allowed"),
    ],
)
async def test_refused_accounts_get_a_page_saying_why(
    sso_page: Page, account: str, reason: str
) -> None:
    await sign_in_at_provider(sso_page, account)
    await expect(sso_page.get_by_role("heading", name="You are not signed in")).to_be_visible()
    await expect(sso_page.get_by_role("alert")).to_have_text(sso.MESSAGES[reason])
    await assert_accessible(sso_page, context=f"sso refused, {reason}")
    await screenshot(sso_page, f"sso-refused-{reason}")


async def test_the_login_page_offers_sso_only_when_configured(sso_page: Page, page: Page) -> None:
    await sso_page.goto("/login")
    await expect(sso_page.get_by_role("link", name="Sign in with SSO")).to_be_visible()
    await assert_accessible(sso_page, context="login with SSO")
    await page.goto("/login")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_role("link", name="Sign in with SSO")).to_have_count(0)
