"""An organisation's members as Settings -> Members lists and changes them, and the invitations
that make new ones."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

from agentlasso.db.pool import Executor
from agentlasso.domain.accounts import Member, Role

_ORGANISATION_OF_PROJECT = "SELECT organisation_id FROM projects WHERE id = $1"
_MEMBERS = """
SELECT u.id AS user_id, u.email, m.role, m.created_at AS joined_at, pr.role AS project_role
FROM memberships m JOIN users u ON u.id = m.user_id
LEFT JOIN project_roles pr ON pr.user_id = m.user_id AND pr.project_id = $2
WHERE m.organisation_id = $1 ORDER BY lower(u.email)
"""
# Locked, so two changes at once cannot both take the last owner away.
_MEMBER_FOR_CHANGE = """
SELECT u.id AS user_id, u.email, m.role, m.created_at AS joined_at, NULL AS project_role
FROM memberships m JOIN users u ON u.id = m.user_id
WHERE m.organisation_id = $1 AND m.user_id = $2 FOR UPDATE OF m
"""
_LOCK_OWNERS = """
SELECT count(*) FROM (
    SELECT 1 FROM memberships WHERE organisation_id = $1 AND role = 'owner' FOR UPDATE
) owners
"""
_PROJECT_ROLE = "SELECT role FROM project_roles WHERE user_id = $1 AND project_id = $2"
_SET_PROJECT_ROLE = """
INSERT INTO project_roles (user_id, project_id, role) VALUES ($1, $2, $3)
ON CONFLICT (user_id, project_id) DO UPDATE SET role = EXCLUDED.role
"""
_CLEAR_PROJECT_ROLE = "DELETE FROM project_roles WHERE user_id = $1 AND project_id = $2"
_CLEAR_PROJECT_ROLES = """
DELETE FROM project_roles pr USING projects p
WHERE pr.user_id = $2 AND p.id = pr.project_id AND p.organisation_id = $1
"""
_SET_ROLE = "UPDATE memberships SET role = $3 WHERE organisation_id = $1 AND user_id = $2"
_INSERT_INVITATION = """
INSERT INTO invitations (token_hash, organisation_id, email, role, invited_by, expires_at)
VALUES ($1, $2, $3, $4, $5, now() + $6::interval)
"""
# Looking at a link uses nothing: only its form does (a link scanner opens links).
_PEEK_INVITATION = """
SELECT email FROM invitations WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
"""
_USE_INVITATION = """
UPDATE invitations SET used_at = now()
WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
RETURNING organisation_id, email, role
"""


async def organisation_of_project(executor: Executor, project_id: UUID) -> UUID:
    """The organisation the project belongs to."""
    organisation_id: UUID = await executor.fetchval(_ORGANISATION_OF_PROJECT, project_id)
    return organisation_id


async def members(executor: Executor, organisation_id: UUID, project_id: UUID) -> list[Member]:
    """The organisation's members, by email, with their role in the project where it is set."""
    rows = await executor.fetch(_MEMBERS, organisation_id, project_id)
    return [Member(**row) for row in rows]


async def project_role(executor: Executor, user_id: UUID, project_id: UUID) -> Role | None:
    """The member's role in this project, when it is set apart from the organisation's."""
    role: Role | None = await executor.fetchval(_PROJECT_ROLE, user_id, project_id)
    return role


async def set_project_role(
    executor: Executor, user_id: UUID, project_id: UUID, role: Role | None
) -> None:
    """Set the member's role in this project, or (None) leave it to the organisation's."""
    if role is None:
        await executor.execute(_CLEAR_PROJECT_ROLE, user_id, project_id)
    else:
        await executor.execute(_SET_PROJECT_ROLE, user_id, project_id, role)


async def clear_project_roles(executor: Executor, organisation_id: UUID, user_id: UUID) -> None:
    """Forget the roles set for the member in the organisation's projects."""
    await executor.execute(_CLEAR_PROJECT_ROLES, organisation_id, user_id)


async def member_for_change(
    executor: Executor, organisation_id: UUID, user_id: UUID
) -> Member | None:
    """A member, locked for the transaction; None when the user is not one."""
    row = await executor.fetchrow(_MEMBER_FOR_CHANGE, organisation_id, user_id)
    return None if row is None else Member(**row)


async def lock_owners(executor: Executor, organisation_id: UUID) -> int:
    """How many owners the organisation has, locked for the transaction."""
    count: int = await executor.fetchval(_LOCK_OWNERS, organisation_id)
    return count


async def set_role(executor: Executor, organisation_id: UUID, user_id: UUID, role: Role) -> None:
    """Change a member's role in the organisation."""
    await executor.execute(_SET_ROLE, organisation_id, user_id, role)


async def insert_invitation(
    executor: Executor,
    token_hash: bytes,
    organisation_id: UUID,
    email: str,
    role: Role,
    invited_by: UUID | None,
    valid_for: timedelta,
) -> None:
    """Store an invitation's token hash, its email and role."""
    await executor.execute(
        _INSERT_INVITATION, token_hash, organisation_id, email, role, invited_by, valid_for
    )


async def invitation_email(executor: Executor, token_hash: bytes) -> str | None:
    """The email an invitation is for, while it can be used."""
    email: str | None = await executor.fetchval(_PEEK_INVITATION, token_hash)
    return email


async def use_invitation(executor: Executor, token_hash: bytes) -> tuple[UUID, str, Role] | None:
    """The organisation, email and role of an invitation, spending it; None when used or old."""
    row = await executor.fetchrow(_USE_INVITATION, token_hash)
    return None if row is None else (row["organisation_id"], row["email"], row["role"])
