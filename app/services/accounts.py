"""Users and their organisations: creating one with a link to set a password, setting it,
and ending a membership."""

from __future__ import annotations

import secrets
from datetime import timedelta
from uuid import UUID

import asyncpg
import msgspec

from agentlasso.db import memberships, projects, sign_in_failures, users
from agentlasso.db.pool import Connection, Executor, connect
from agentlasso.domain.accounts import Role
from agentlasso.domain.audit import Caller, UserActor
from agentlasso.errors import Conflict, FieldError, InvalidInput, NotAuthenticated
from agentlasso.services.passwords import check_new_password, hash_password
from agentlasso.services.platform import Platform
from agentlasso.services.web_sessions import MAX_TOKEN_LENGTH, NewSession, open_session, token_hash

# A set-password link works once, within this.
PASSWORD_LINK_VALID_FOR = timedelta(days=7)
SET_LINK_SPENT = (
    "This set-password link has been used or has expired: ask an owner of your organisation "
    "for a new one."
)
MAX_EMAIL_LENGTH = 254


class NewUser(msgspec.Struct, frozen=True, kw_only=True):
    """A user just created, and the token of their one-time set-password link."""

    user_id: UUID
    organisation_id: UUID
    password_token: str


def check_email(email: str) -> str:
    """The email as it will be stored (trimmed); InvalidInput naming `email` when it is not one."""
    email = email.strip()
    local, at, domain = email.rpartition("@")
    if not at or not local or "." not in domain or len(email) > MAX_EMAIL_LENGTH or " " in email:
        detail = "Give an email address, such as ana@example.com."
        raise InvalidInput(detail, [FieldError(pointer="/email", detail=detail)])
    return email


async def create_user(connection: Connection, email: str, organisation: str, role: Role) -> NewUser:
    """A new member of the organisation (made, with a project of its name, if missing) without
    a password yet; Conflict when a user has this email."""
    email = check_email(email)
    organisation_id = await users.ensure_organisation(connection, organisation)
    if await users.first_project(connection, organisation_id) is None:
        # A project of the organisation's own name: a new project of that name joins it.
        await projects.ensure_project(connection, organisation)
    try:
        user_id = await users.insert_user(connection, email)
    except asyncpg.UniqueViolationError:
        raise Conflict(f"A user with the email {email} already exists.") from None
    await users.set_membership(connection, user_id, organisation_id, role)
    token = await create_password_token(connection, user_id)
    return NewUser(user_id=user_id, organisation_id=organisation_id, password_token=token)


async def create_user_at(database_url: str, email: str, organisation: str, role: Role) -> NewUser:
    """`create_user` in a transaction of its own, for the command line."""
    connection = await connect(database_url)
    try:
        async with connection.transaction():
            return await create_user(connection, email, organisation, role)
    finally:
        await connection.close()


async def create_password_token(executor: Executor, user_id: UUID) -> str:
    """A token for a one-time link to set the user's password (`/set-password?token=...`)."""
    token = secrets.token_urlsafe(32)
    await users.insert_password_token(executor, token_hash(token), user_id, PASSWORD_LINK_VALID_FOR)
    return token


async def password_link_email(platform: Platform, token: str) -> str:
    """The email a set-password link (or an invitation's) is for (the link stays unused);
    NotAuthenticated when it was used or is too old."""
    email = None
    if len(token) <= MAX_TOKEN_LENGTH:
        email = await users.password_token_email(platform.pool, token_hash(token))
        if email is None:
            email = await memberships.invitation_email(platform.pool, token_hash(token))
    if email is None:
        raise NotAuthenticated(SET_LINK_SPENT)
    return email


async def set_password_with_link(
    platform: Platform, token: str, password: str, ip: str | None = None
) -> NewSession:
    """Set the password a link is for, spending the link, and sign the user in;
    InvalidInput when the password falls short, NotAuthenticated when the link is spent."""
    email = await password_link_email(platform, token)
    check_new_password(password, email)
    password_hash = await hash_password(password)
    async with platform.pool.acquire() as connection, connection.transaction():
        user_id = await users.use_password_token(connection, token_hash(token))
        if user_id is None:
            user_id = await _accept_invitation(connection, token)
        if user_id is None:
            raise NotAuthenticated(SET_LINK_SPENT)
        await users.set_password_hash(connection, user_id, password_hash)
        await sign_in_failures.clear_failures(connection, email)
        user = await users.sign_in_user(connection, email)
    if user is None or user.project_id is None:
        raise NotAuthenticated(NO_PROJECT)
    caller = Caller(actor=UserActor(id=user_id, email=user.email), ip=ip)
    return await open_session(
        platform, user.project_id, caller, "set_password_link", user_id=user_id
    )


async def _accept_invitation(connection: Connection, token: str) -> UUID | None:
    """Spend an invitation: its person becomes a user and a member with its role; the user's
    id, or None when the invitation was used or is too old."""
    invited = await memberships.use_invitation(connection, token_hash(token))
    if invited is None:
        return None
    organisation_id, email, role = invited
    try:
        # The whole transaction rolls back on a refusal: the invitation stays unspent.
        user_id = await users.insert_user(connection, email)
    except asyncpg.UniqueViolationError:
        raise Conflict(f"{email} already has an account: sign in instead.") from None
    await users.set_membership(connection, user_id, organisation_id, role)
    return user_id


NO_PROJECT = "Your account belongs to no organisation with a project: ask an owner to add you."


async def remove_member(executor: Executor, user_id: UUID, organisation_id: UUID) -> bool:
    """End the user's membership and, at once, their sessions in its projects."""
    return await users.delete_membership(executor, user_id, organisation_id)
