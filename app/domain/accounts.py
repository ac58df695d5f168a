"""People: users, the organisations they belong to, and their roles."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec

Role = Literal["viewer", "member", "admin", "owner"]
# From the least to the most: each role may do all that the ones before it may.
ROLES: tuple[Role, ...] = ("viewer", "member", "admin", "owner")


def role_includes(held: Role, needed: Role) -> bool:
    """Whether a user of role `held` may do what needs role `needed`."""
    return ROLES.index(held) >= ROLES.index(needed)


class SignInUser(msgspec.Struct, frozen=True, kw_only=True):
    """What a password sign-in needs of a user: their hash (None until set) and the project
    their pages act on (their organisation's first; None when they have none)."""

    id: UUID
    email: str
    password_hash: str | None
    project_id: UUID | None


class Member(msgspec.Struct, frozen=True, kw_only=True):
    """A member of an organisation, as Settings -> Members lists them."""

    user_id: UUID
    email: str
    role: Role
    joined_at: datetime
    # Their role in the project the list is for, when it differs from the organisation's.
    project_role: Role | None = None
