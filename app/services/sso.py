"""Signing in with single sign-on (OpenID Connect, authorization code with PKCE).

A sign-in starts with a state, a nonce and a PKCE verifier kept server-side, tied to a random
cookie of the browser that started it; the callback takes them once (a replayed state finds
nothing). The provider's identity (issuer and subject) is remembered on the first sign-in, and
from then on signs in as that user whatever email the provider says later: a changed email at
the provider cannot take over the account that has it. A first sign-in needs a verified email
in an allowed domain; it signs in the user with that email, or makes one, a viewer of the
newcomers' organisation (AGENTLASSO_OIDC_ORGANISATION, else the only one there is). An account
that existed is taken over whole: in the same transaction its password is cleared, its open
links spent and its sessions ended (`user.sso_linked` in the audit log), so whoever set that
password (an inviter, an operator) cannot sign in as the person.

Only a refusal after the state matched its browser is audited: a state unknown, expired or of
another browser is anyone's request, and goes to the server's log alone.
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta
from uuid import UUID

import msgspec

from agentlasso.config import Settings
from agentlasso.db import sso as sso_rows
from agentlasso.db import users
from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.audit import AuditObject, Caller, SsoActor, UserActor
from agentlasso.errors import NotAuthenticated
from agentlasso.services import audit, oidc
from agentlasso.services.platform import Platform
from agentlasso.services.web_sessions import NewSession, open_session, token_hash

log = logging.getLogger("agentlasso.audit")

ATTEMPT_VALID_FOR = timedelta(minutes=10)
AGAIN = "Start again from the sign-in page."
MESSAGES = {
    "unverified_email": (
        "Your identity provider has not verified your email address, so it cannot sign you in"
        " here. Verify it with your provider, then try again."
    ),
    "domain_not_allowed": (
        "Your email's domain may not sign in here with SSO. Ask an owner of your organisation"
        " for an invitation."
    ),
    "email_taken": (
        "Another SSO identity already signs in with this email here. Ask an owner of your"
        " organisation for help."
    ),
    "unknown_state": f"This sign-in has already been used, or was never started here. {AGAIN}",
    "expired_state": f"This sign-in took too long. {AGAIN}",
    "other_browser": f"This sign-in was started in another browser. {AGAIN}",
    "provider_unreachable": (
        "The identity provider could not be reached (or answered out of turn): try again in a"
        " while."
    ),
    "no_organisation": (
        "SSO is not fully set up on this server (no organisation for new members). Ask its"
        " operator."
    ),
}
# Refusals before a state matched the browser that started it: anyone can cause them.
ANYONES = frozenset({"unknown_state", "expired_state", "other_browser"})
REFUSED = f"Your identity provider's answer could not be trusted, so you are not signed in. {AGAIN}"


class SsoRefused(NotAuthenticated):
    """Single sign-on did not sign in; `reason` says why in a word (for the audit log)."""

    def __init__(self, reason: str) -> None:
        super().__init__(MESSAGES.get(reason, REFUSED))
        self.reason = reason


class Started(msgspec.Struct, frozen=True):
    """A sign-in just started: where the browser goes, and the cookie that ties it there."""

    location: str
    browser_token: str


def is_configured(settings: Settings) -> bool:
    """Whether `Sign in with SSO` is offered: issuer, client id and secret all set."""
    return bool(settings.oidc_issuer and settings.oidc_client_id and settings.oidc_client_secret)


async def start(platform: Platform, redirect_uri: str, next_path: str) -> Started:
    """Store a new state, nonce and verifier; the provider's authorization URL for them."""
    issuer, client_id, _secret = _client(platform.settings)
    found = await _provider(issuer)
    state, nonce, browser = (secrets.token_urlsafe(32) for _ in range(3))
    verifier, challenge = oidc.new_verifier()
    await sso_rows.insert_attempt(
        platform.pool, token_hash(state), token_hash(browser), nonce, verifier, next_path,
        ATTEMPT_VALID_FOR,
    )  # fmt: skip
    location = oidc.authorization_url(found, client_id, redirect_uri, state, nonce, challenge)
    return Started(location=location, browser_token=browser)


async def finish(
    platform: Platform, *, state: str, code: str | None, browser_token: str | None,
    redirect_uri: str, ip: str | None,
) -> tuple[NewSession, str]:  # fmt: skip
    """The session the provider's answer signs in, and the page to go on to; SsoRefused (in
    the audit log of the newcomers' organisation's project, and the server's log) otherwise."""
    claims: dict[str, object] = {}
    try:
        attempt = await _take(platform, state, browser_token)
        if not code:
            raise SsoRefused("provider_error")
        claims = await _claims(platform.settings, redirect_uri, code, attempt)
        user_id = await _user_for(platform, claims, ip)
        return await _open(platform, user_id, ip), attempt.next_path
    except SsoRefused as refused:
        if refused.reason in ANYONES:
            log.warning("sign_in.failed: sso refused (%s), from %s", refused.reason, ip)
        else:
            await _record_refusal(platform, refused.reason, claims, ip)
        raise
    except oidc.OidcRefused as refused:
        await _record_refusal(platform, refused.reason, claims, ip)
        raise SsoRefused(refused.reason) from refused


async def _provider(issuer: str) -> oidc.Provider:
    try:
        return await oidc.provider(issuer)
    except oidc.OidcRefused as exc:
        log.warning("sso: the identity provider's discovery failed (%s)", exc.reason)
        raise SsoRefused(exc.reason) from exc


async def _take(platform: Platform, state: str, browser_token: str | None) -> sso_rows.Attempt:
    """The sign-in this state started, used up now; SsoRefused when it cannot go on."""
    attempt = None
    if 0 < len(state) <= 100:
        attempt = await sso_rows.take_attempt(platform.pool, token_hash(state))
    if attempt is None:
        raise SsoRefused("unknown_state")
    if not attempt.live:
        raise SsoRefused("expired_state")
    if not browser_token or not secrets.compare_digest(
        token_hash(browser_token), attempt.browser_hash
    ):
        raise SsoRefused("other_browser")
    return attempt


async def _claims(
    settings: Settings, redirect_uri: str, code: str, attempt: sso_rows.Attempt
) -> dict[str, object]:
    """The checked claims of the ID token the code is exchanged for."""
    issuer, client_id, secret = _client(settings)
    found = await oidc.provider(issuer)
    id_token = await oidc.exchange_code(
        found, client_id, secret, redirect_uri, code, attempt.code_verifier
    )
    try:
        return oidc.verified_claims(found, client_id, id_token, attempt.nonce)
    except oidc.OidcRefused as exc:
        if exc.reason != "bad_signature":
            raise
    # The provider may have rotated its keys: read them again, once.
    oidc.forget_provider(issuer)
    found = await oidc.provider(issuer)
    return oidc.verified_claims(found, client_id, id_token, attempt.nonce)


def _client(settings: Settings) -> tuple[str, str, str]:
    """The issuer, client id and secret; SsoRefused when one is unset."""
    issuer, client_id, secret = (
        settings.oidc_issuer, settings.oidc_client_id, settings.oidc_client_secret
    )  # fmt: skip
    if not (issuer and client_id and secret):
        raise SsoRefused("not_configured")
    return issuer, client_id, secret


async def _user_for(platform: Platform, claims: dict[str, object], ip: str | None) -> UUID:
    """The user these claims sign in as: the remembered identity's, else (a first sign-in) the
    user with the verified email in an allowed domain, taken over, or a new viewer."""
    issuer, subject = str(claims["iss"]), str(claims["sub"])
    known = await sso_rows.identity_user(platform.pool, issuer, subject)
    if known is not None:
        return known
    email = claims.get("email")
    if not isinstance(email, str) or claims.get("email_verified") is not True:
        raise SsoRefused("unverified_email")
    if not _domain_allowed(platform.settings, email):
        raise SsoRefused("domain_not_allowed")
    async with platform.pool.acquire() as connection, connection.transaction():
        user_id = await users.user_id_by_email(connection, email)
        if user_id is not None and await sso_rows.user_has_identity(connection, issuer, user_id):
            raise SsoRefused("email_taken")
        if user_id is None:
            user_id = await _join(connection, platform.settings, email)
        else:
            await _take_over(connection, user_id, email, ip)
        await sso_rows.remember_identity(connection, issuer, subject, user_id)
    return user_id


async def _take_over(connection: Connection, user_id: UUID, email: str, ip: str | None) -> None:
    """End every other way into an account SSO signs in to for the first time, in the log of
    the user's first project."""
    had_password, links_spent, sessions_ended = await users.retire_other_sign_ins(
        connection, user_id
    )
    user = await users.sign_in_user(connection, email)
    if user is None or user.project_id is None:
        return
    caller = Caller(actor=UserActor(id=user_id, email=user.email), ip=ip)
    await audit.record(
        connection, user.project_id, caller, "user.sso_linked",
        AuditObject(type="user", id=str(user_id)), email=user.email,
        password_cleared=had_password, links_spent=links_spent, sessions_ended=sessions_ended,
    )  # fmt: skip


def _domain_allowed(settings: Settings, email: str) -> bool:
    domain = email.rpartition("@")[2].strip().lower()
    allowed = {name.strip().lower().lstrip("@") for name in settings.oidc_allowed_domains}
    return bool(domain) and domain in allowed


async def _join(connection: Executor, settings: Settings, email: str) -> UUID:
    """A new user with this email, a viewer of the newcomers' organisation."""
    organisation_id = await sso_rows.organisation_for_newcomers(
        connection, settings.oidc_organisation
    )
    if organisation_id is None:
        raise SsoRefused("no_organisation")
    user_id = await users.insert_user(connection, email)
    await users.set_membership(connection, user_id, organisation_id, "viewer")
    return user_id


async def _open(platform: Platform, user_id: UUID, ip: str | None) -> NewSession:
    email = await sso_rows.user_email(platform.pool, user_id)
    user = None if email is None else await users.sign_in_user(platform.pool, email)
    if user is None or user.project_id is None:
        raise SsoRefused("no_organisation")
    caller = Caller(actor=UserActor(id=user.id, email=user.email), ip=ip)
    return await open_session(platform, user.project_id, caller, "sso", user_id=user.id)


async def _record_refusal(
    platform: Platform, reason: str, claims: dict[str, object], ip: str | None
) -> None:
    """sign_in.failed (method sso, the reason) in the log of the newcomers' organisation's
    first project, and a warning in the server's log; never a token."""
    log.warning("sign_in.failed: sso refused (%s), from %s", reason, ip)
    organisation_id = await sso_rows.organisation_for_newcomers(
        platform.pool, platform.settings.oidc_organisation
    )
    project_id = None
    if organisation_id is not None:
        project_id = await users.first_project(platform.pool, organisation_id)
    if project_id is None:
        return
    email = claims.get("email")
    caller = Caller(actor=SsoActor(email=email if isinstance(email, str) else None), ip=ip)
    async with platform.pool.acquire() as connection, connection.transaction():
        await audit.record(
            connection, project_id, caller, "sign_in.failed", method="sso", reason=reason
        )
