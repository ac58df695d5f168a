"""Settings -> Members: the organisation's members and their roles; inviting one (a one-time
link shown to the inviter to send), changing a role, removing a member."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath

from agentlasso.domain.accounts import ROLES, role_includes
from agentlasso.errors import BeyondRole, Conflict, InvalidInput
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.http.permissions import PEOPLE_ONLY
from agentlasso.services import members as member_service
from agentlasso.services.members import INVITATION_VALID_FOR, Acting
from agentlasso.services.platform import Platform
from agentlasso.web.forms import by_field, text
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import caller_of, session_of

PATH = "/settings/members"
ROLE_CHOICES = [(role, role.capitalize()) for role in ROLES]
# Owner holds the whole organisation: it is never one project's role.
PROJECT_ROLE_CHOICES = [(role, label) for role, label in ROLE_CHOICES if role != "owner"]


class MemberPages(Controller):
    """/settings/members and its forms."""

    path = PATH

    @get("/", name="members")
    async def members(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """The members, their roles, and the invite form."""
        return await members_page(request, platform)

    @post("/invite", name="invite_member")
    async def invite(self, request: Request[Any, Any, Any], platform: PlatformDep) -> Response[Any]:
        """A one-time link for the email and role, shown this once to send."""
        form = await request.form()
        email, role = text(form, "email"), text(form, "role")
        try:
            token = await member_service.invite(
                platform, acting_of(request), email, member_service.parse_role(role)
            )
        except InvalidInput as exc:
            errors = by_field(exc.errors)
            return await members_page(request, platform, errors, email, role, status_code=422)
        except (Conflict, BeyondRole) as exc:
            status = 409 if isinstance(exc, Conflict) else 403
            errors = {"email" if status == 409 else "role": exc.detail}
            return await members_page(request, platform, errors, email, role, status_code=status)
        link = f"{str(request.base_url).rstrip('/')}/set-password?token={token}"
        return await members_page(request, platform, invited=(email, role, link))

    @post("/{user_id:str}/role", name="change_member_role")
    async def change_role(
        self, request: Request[Any, Any, Any], platform: PlatformDep, user_id: FromPath[str]
    ) -> Response[Any]:
        """Give the member the role chosen."""
        form = await request.form()
        role = member_service.parse_role(text(form, "role"))
        await member_service.change_role(platform, acting_of(request), _member_id(user_id), role)
        return redirect(request, f"{PATH}?changed=1")

    @post("/{user_id:str}/project-role", name="change_member_project_role")
    async def change_project_role(
        self, request: Request[Any, Any, Any], platform: PlatformDep, user_id: FromPath[str]
    ) -> Response[Any]:
        """Set the member's role in this project apart from the organisation's, or not."""
        form = await request.form()
        chosen = text(form, "project_role")
        role = None if chosen == "" else member_service.parse_role(chosen, "project_role")
        await member_service.change_project_role(
            platform, acting_of(request), _member_id(user_id), role
        )
        return redirect(request, f"{PATH}?changed=1")

    @post("/{user_id:str}/remove", name="remove_member")
    async def remove(
        self, request: Request[Any, Any, Any], platform: PlatformDep, user_id: FromPath[str]
    ) -> Response[Any]:
        """End the membership; the member's sessions end with it."""
        await member_service.remove(platform, acting_of(request), _member_id(user_id))
        return redirect(request, f"{PATH}?removed=1")


def _member_id(value: str) -> UUID:
    return parse_id(value, "member")


def acting_of(request: Request[Any, Any, Any]) -> Acting:
    """Who acts: the signed-in user with their roles (the guard lets in no other session)."""
    session = session_of(request)
    if session.user_id is None or session.role is None or session.organisation_role is None:
        raise BeyondRole(PEOPLE_ONLY)
    return Acting(
        project_id=session.project_id, role=session.role,
        organisation_role=session.organisation_role, user_id=session.user_id,
        caller=caller_of(request),
    )  # fmt: skip


async def members_page(
    request: Request[Any, Any, Any],
    platform: Platform,
    errors: dict[str, str] | None = None,
    email: str = "",
    role: str = "viewer",
    *,
    invited: tuple[str, str, str] | None = None,
    status_code: int = 200,
) -> Response[Any]:
    """The page, with the invite form's errors or the link just made."""
    session = session_of(request)
    response = page(
        request,
        "members.html",
        status_code=status_code,
        members=await member_service.list_members(platform, session.project_id),
        role_choices=ROLE_CHOICES,
        project_role_choices=PROJECT_ROLE_CHOICES,
        organisation_admin=session.organisation_role is not None
        and role_includes(session.organisation_role, "admin"),
        errors=errors or {},
        email=email,
        role=role,
        invited=invited,
        valid_days=INVITATION_VALID_FOR.days,
        changed=request.query_params.get("changed") == "1",
        removed=request.query_params.get("removed") == "1",
    )
    # The page may hold an invitation's link: nobody else should see it, not even a Referer.
    response.headers["referrer-policy"] = "no-referrer"
    response.headers["cache-control"] = "no-store"
    return response
