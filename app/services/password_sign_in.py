"""Signing in with an email and a password, telling nobody whether the email has an account.

An unknown email is verified against a dummy hash, so it is refused as slowly as a wrong
password; failures are counted per address whether or not a user has it, so a lockout says
nothing either. Five failures within 15 minutes lock the address for 15 minutes, the right
password included.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from agentlasso.db import sign_in_failures, users
from agentlasso.domain.audit import Caller, UserActor
from agentlasso.errors import NotAuthenticated
from agentlasso.services.accounts import MAX_EMAIL_LENGTH, NO_PROJECT
from agentlasso.services.passwords import hash_password, needs_rehash, verify_password
from agentlasso.services.platform import Platform
from agentlasso.services.web_sessions import NewSession, open_session

log = logging.getLogger("agentlasso.audit")

LOCK_AFTER_FAILURES = 5
FAILURE_WINDOW = timedelta(minutes=15)
LOCKED_FOR = timedelta(minutes=15)
NO_MATCH = "That email and password do not match: try again."
LOCKED = (
    "Too many failed sign-ins with this email: wait 15 minutes, then try again (or set a new "
    "password with a link from an owner of your organisation)."
)


class SignInRefused(NotAuthenticated):
    """The email and password did not sign in (never saying whether the email has an account)."""


async def sign_in_with_password(
    platform: Platform, email: str, password: str, ip: str | None = None
) -> NewSession:
    """A session for the user with this email and password, its sign-in in the project's audit
    log; SignInRefused otherwise (not in any audit log: a refusal names no project)."""
    email = email.strip()[: MAX_EMAIL_LENGTH + 1]
    # Counted before the check: guesses sent at once each take their own turn of the five.
    locked, attempt = await sign_in_failures.take_attempt(
        platform.pool, email, window=FAILURE_WINDOW, sweep_after=max(FAILURE_WINDOW, LOCKED_FOR)
    )
    locked = locked or attempt > LOCK_AFTER_FAILURES
    user = await users.sign_in_user(platform.pool, email)
    # Verified even when locked or unknown: every refusal takes one verify's time.
    matched = await verify_password(None if user is None else user.password_hash, password)
    if locked or user is None or not matched:
        # No project's log: an email names none, and which one would say it has an account.
        log.warning("sign_in.failed: a wrong email or password, from %s", ip)
    if locked:
        raise SignInRefused(LOCKED)
    if user is None or not matched:
        if attempt < LOCK_AFTER_FAILURES:
            raise SignInRefused(NO_MATCH)
        await sign_in_failures.lock(platform.pool, email, LOCKED_FOR)
        raise SignInRefused(LOCKED)
    await sign_in_failures.clear_failures(platform.pool, email)
    if user.password_hash is not None and needs_rehash(user.password_hash):
        await users.set_password_hash(platform.pool, user.id, await hash_password(password))
    if user.project_id is None:
        raise NotAuthenticated(NO_PROJECT)
    caller = Caller(actor=UserActor(id=user.id, email=user.email), ip=ip)
    return await open_session(platform, user.project_id, caller, "password", user_id=user.id)
