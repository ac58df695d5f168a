"""Settings -> Members: listing an organisation's members, inviting one with a one-time link,
changing a role and removing a member (whose sessions end at once).

Inviting, changing a role and removing change the organisation, so they are held to the
actor's organisation role (an admin or above), never to a role set for one project. Two rules
hold whoever acts: only an owner grants, changes or removes the owner role, and an organisation
always keeps an owner. Owner is organisation-wide: it is never a role set for one project. Only
people change the members: the page guard refuses a session opened with a key or a project's
sign-in link (app/http/permissions.py).
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from uuid import UUID

import msgspec

from agentlasso.db import memberships, users
from agentlasso.db.pool import Connection
from agentlasso.domain.accounts import ROLES, Member, Role, role_includes
from agentlasso.domain.audit import AuditObject, Caller
from agentlasso.errors import BeyondRole, Conflict, FieldError, InvalidInput, NotFound
from agentlasso.services import audit
from agentlasso.services.accounts import check_email
from agentlasso.services.platform import Platform
from agentlasso.services.web_sessions import token_hash

# An invitation's link works once, within this.
INVITATION_VALID_FOR = timedelta(days=7)
OWNERS_ONLY = 'Granting, changing or removing the role "owner" needs the role "owner".'
LAST_OWNER = "An organisation needs an owner: make another member an owner first."
OWNER_EVERYWHERE = "An owner holds every project of the organisation: their role here stays owner."
OWNER_IS_ORGANISATION_WIDE = (
    'The role "owner" holds the whole organisation: it cannot be set for one project. Choose '
    "viewer, member or admin, or change the organisation role."
)
ORGANISATION_ADMINS_ONLY = (
    'Your role in the organisation is "{role}"; changing the organisation\'s members needs the '
    'role "admin" or above there (a role set for one project does not count).'
)


class Acting(msgspec.Struct, frozen=True, kw_only=True):
    """Who changes the members: their project, their role in it and in the organisation, their
    user, for the log."""

    project_id: UUID
    role: Role
    organisation_role: Role
    user_id: UUID
    caller: Caller


def parse_role(value: object, field: str = "role") -> Role:
    """The role this text names; InvalidInput naming the field otherwise."""
    for role in ROLES:
        if value == role:
            return role
    detail = "Choose a role: viewer, member, admin or owner."
    raise InvalidInput(detail, [FieldError(pointer=f"/{field}", detail=detail)])


async def list_members(platform: Platform, project_id: UUID) -> list[Member]:
    """The members of the project's organisation."""
    async with platform.pool.acquire() as connection:
        organisation_id = await memberships.organisation_of_project(connection, project_id)
        return await memberships.members(connection, organisation_id, project_id)


async def invite(platform: Platform, acting: Acting, email: str, role: Role) -> str:
    """A one-time link's token inviting the email to the organisation with the role (only its
    hash is kept); Conflict when someone already has an account with the email."""
    email = check_email(email)
    _organisation_admin(acting)
    _owner_rule(acting, role)
    token = secrets.token_urlsafe(32)
    async with platform.pool.acquire() as connection, connection.transaction():
        # The inviter sees the link: it must never set the password of an account that exists.
        if await users.user_id_by_email(connection, email) is not None:
            raise Conflict(f"{email} already has an account.")
        organisation_id = await memberships.organisation_of_project(connection, acting.project_id)
        await memberships.insert_invitation(
            connection, token_hash(token), organisation_id, email, role, acting.user_id,
            INVITATION_VALID_FOR,
        )  # fmt: skip
        await audit.record(
            connection, acting.project_id, acting.caller, "member.invited", email=email, role=role
        )
    return token


async def change_role(platform: Platform, acting: Acting, user_id: UUID, role: Role) -> None:
    """Give a member another role; NotFound when they are none of the organisation's."""
    _organisation_admin(acting)
    async with platform.pool.acquire() as connection, connection.transaction():
        organisation_id, member = await _member(connection, acting, user_id)
        if member.role == role:
            return
        _owner_rule(acting, role if role == "owner" else member.role)
        if member.role == "owner":
            await _keep_an_owner(connection, organisation_id)
        await memberships.set_role(connection, organisation_id, user_id, role)
        if role == "owner":
            # An owner holds every project: a narrower role left from before would not.
            await memberships.clear_project_roles(connection, organisation_id, user_id)
        subject = AuditObject(type="user", id=str(user_id))
        await audit.record(
            connection, acting.project_id, acting.caller, "member.role_changed", subject,
            email=member.email, old_role=member.role, new_role=role,
        )  # fmt: skip


async def change_project_role(
    platform: Platform, acting: Acting, user_id: UUID, role: Role | None
) -> None:
    """Narrow or widen a member's role in the acting project, or (None) leave it to their
    organisation role; an owner holds every project, so theirs is not narrowed, and owner is
    never one project's role."""
    if role == "owner":
        detail = OWNER_IS_ORGANISATION_WIDE
        raise InvalidInput(detail, [FieldError(pointer="/project_role", detail=detail)])
    project_id = acting.project_id
    async with platform.pool.acquire() as connection, connection.transaction():
        _, member = await _member(connection, acting, user_id)
        if member.role == "owner":
            raise Conflict(OWNER_EVERYWHERE)
        old = await memberships.project_role(connection, user_id, project_id)
        if old == role:
            return
        _owner_rule(acting, "owner" if "owner" in (old, role) else "viewer")
        await memberships.set_project_role(connection, user_id, project_id, role)
        subject = AuditObject(type="user", id=str(user_id))
        await audit.record(
            connection, project_id, acting.caller, "member.project_role_changed", subject,
            email=member.email, old_role=old, new_role=role, organisation_role=member.role,
        )  # fmt: skip


async def remove(platform: Platform, acting: Acting, user_id: UUID) -> None:
    """End a membership and, at once, the member's sessions in the organisation's projects."""
    _organisation_admin(acting)
    async with platform.pool.acquire() as connection, connection.transaction():
        organisation_id, member = await _member(connection, acting, user_id)
        if member.role == "owner":
            _owner_rule(acting, "owner")
            await _keep_an_owner(connection, organisation_id)
        # Roles set for the organisation's projects go too: joining again starts afresh.
        await memberships.clear_project_roles(connection, organisation_id, user_id)
        await users.delete_membership(connection, user_id, organisation_id)
        subject = AuditObject(type="user", id=str(user_id))
        await audit.record(
            connection, acting.project_id, acting.caller, "member.removed", subject,
            email=member.email, role=member.role,
        )  # fmt: skip


async def _member(connection: Connection, acting: Acting, user_id: UUID) -> tuple[UUID, Member]:
    organisation_id = await memberships.organisation_of_project(connection, acting.project_id)
    member = await memberships.member_for_change(connection, organisation_id, user_id)
    if member is None:
        raise NotFound("There is no such member of your organisation.")
    return organisation_id, member


def _owner_rule(acting: Acting, role: Role) -> None:
    if role == "owner" and acting.organisation_role != "owner":
        raise BeyondRole(OWNERS_ONLY)


def _organisation_admin(acting: Acting) -> None:
    """BeyondRole unless the actor is an admin or owner of the organisation itself."""
    if not role_includes(acting.organisation_role, "admin"):
        raise BeyondRole(ORGANISATION_ADMINS_ONLY.format(role=acting.organisation_role))


async def _keep_an_owner(connection: Connection, organisation_id: UUID) -> None:
    """Conflict when the member about to lose the owner role is the organisation's last."""
    if await memberships.lock_owners(connection, organisation_id) <= 1:
        raise Conflict(LAST_OWNER)
