"""Settings -> Members against grants that reach too far, over real HTTP: a role set for one
project never changes the organisation (nor is owner ever one project's role), a session opened
with a key or a project's sign-in link never reaches the members, and an owner is an owner in
every project whatever a project's row says."""

from __future__ import annotations

import uuid

import asyncpg
import httpx
import pytest

from agentlasso.http.permissions import PEOPLE_ONLY
from agentlasso.services.api_keys import create_key_for_project_name
from agentlasso.services.members import ORGANISATION_ADMINS_ONLY, OWNER_IS_ORGANISATION_WIDE
from agentlasso.services.web_sessions import create_login_link_token
from tests.integration.test_members import LINK, accept, invite, member_id, signed_in_owner
from tests.support.accounts import new_email
from tests.support.web import browser, hidden_field, project_of, shown_text, signed_in_csrf


@pytest.fixture
def organisation() -> str:
    return f"grants-{uuid.uuid4().hex[:12]}"


async def fetch(database_url: str, query: str, *args: object) -> object:
    connection = await asyncpg.connect(database_url)
    try:
        return await connection.fetchval(query, *args)
    finally:
        await connection.close()


async def org_role(database_url: str, user_id: str) -> object:
    return await fetch(
        database_url, "SELECT role FROM memberships WHERE user_id = $1", uuid.UUID(user_id)
    )


async def joined(
    owner: httpx.AsyncClient, csrf: str, person: httpx.AsyncClient, role: str
) -> tuple[str, str, str]:
    """A new member with the role, signed in on `person`: their email, id and CSRF token."""
    email = new_email()
    made = LINK.search((await invite(owner, csrf, email, role)).text)
    assert made is not None
    person_csrf = await accept(person, made.group(1))
    return email, member_id((await owner.get("/settings/members")).text, email), person_csrf


async def set_project_role(
    web: httpx.AsyncClient, csrf: str, user_id: str, role: str
) -> httpx.Response:
    return await web.post(
        f"/settings/members/{user_id}/project-role",
        data={"project_role": role, "csrf_token": csrf},
    )


async def test_a_project_admin_cannot_change_the_organisation(
    base_url: str, database_url: str, organisation: str
) -> None:
    async with browser(base_url) as owner, browser(base_url) as person:
        csrf = await signed_in_owner(owner, database_url, organisation)
        _, me, my_csrf = await joined(owner, csrf, person, "viewer")
        assert (await set_project_role(owner, csrf, me, "admin")).status_code == 303
        # An admin of this project: the page shows the project's forms, not the organisation's.
        page = await person.get("/settings/members")
        assert page.status_code == 200 and "/project-role" in page.text
        assert "/settings/members/invite" not in page.text and f"{me}/role" not in page.text
        assert "need the role admin in the organisation" in shown_text(page.text)
        refusal = ORGANISATION_ADMINS_ONLY.format(role="viewer")
        raised = await person.post(
            f"/settings/members/{me}/role", data={"role": "admin", "csrf_token": my_csrf}
        )
        assert raised.status_code == 403 and refusal in shown_text(raised.text)
        assert await org_role(database_url, me) == "viewer"
        invited = await invite(person, my_csrf, new_email(), "admin")
        assert invited.status_code == 403 and refusal in shown_text(invited.text)
        owners = await fetch(
            database_url,
            "SELECT m.user_id::text FROM memberships m JOIN users u ON u.id = m.user_id "
            "WHERE m.role = 'owner' AND m.user_id <> $1 AND m.organisation_id = "
            "(SELECT organisation_id FROM memberships WHERE user_id = $1)",
            uuid.UUID(me),
        )
        removing = await person.post(
            f"/settings/members/{owners}/remove", data={"csrf_token": my_csrf}
        )
        assert removing.status_code == 403 and refusal in shown_text(removing.text)


async def test_owner_is_never_one_projects_role(
    base_url: str, database_url: str, organisation: str
) -> None:
    async with browser(base_url) as owner, browser(base_url) as person:
        csrf = await signed_in_owner(owner, database_url, organisation)
        _, them, their_csrf = await joined(owner, csrf, person, "member")
        refused = await set_project_role(owner, csrf, them, "owner")
        assert refused.status_code == 422
        assert OWNER_IS_ORGANISATION_WIDE in shown_text(refused.text)
        assert (
            await fetch(
                database_url,
                "SELECT count(*) FROM project_roles WHERE user_id = $1",
                uuid.UUID(them),
            )
            == 0
        )
        raised = await person.post(
            f"/settings/members/{them}/role", data={"role": "owner", "csrf_token": their_csrf}
        )
        assert raised.status_code == 403
        assert await org_role(database_url, them) == "member"
        # A project "owner" row written before owner was refused counts for nothing.
        await fetch(
            database_url,
            "INSERT INTO project_roles (user_id, project_id, role) SELECT $1, p.id, 'owner' "
            "FROM projects p JOIN memberships m ON m.organisation_id = p.organisation_id "
            "WHERE m.user_id = $1 RETURNING 1",
            uuid.UUID(them),
        )
        assert "Role: member" in shown_text((await person.get("/datasets")).text)
        listing = (await owner.get("/settings/members")).text
        project_choices = listing.split('name="project_role"', 1)[1].split("</select>", 1)[0]
        assert '<option value="admin"' in project_choices
        assert '<option value="owner"' not in project_choices


async def test_a_key_or_a_project_link_never_reaches_the_members(
    base_url: str, database_url: str, organisation: str
) -> None:
    async with browser(base_url) as owner:
        await signed_in_owner(owner, database_url, organisation)
    key = await create_key_for_project_name(database_url, organisation)
    connection = await asyncpg.connect(database_url)
    try:
        link = await create_login_link_token(connection, await project_of(connection, key.key))
    finally:
        await connection.close()
    email = new_email()
    async with browser(base_url) as keyholder, browser(base_url) as linked:
        sessions = [(keyholder, await signed_in_csrf(keyholder, key.key))]
        form = await linked.get("/login", params={"token": link})
        opened = await linked.post(
            "/login/link",
            data={"token": link, "login_token": hidden_field(form.text, "login_token")},
        )
        assert opened.status_code == 303, opened.text
        sessions.append((linked, hidden_field((await linked.get("/datasets")).text, "csrf_token")))
        for web, csrf in sessions:
            listing = await web.get("/settings/members")
            assert listing.status_code == 403 and PEOPLE_ONLY in shown_text(listing.text)
            made = await invite(web, csrf, email, "admin")
            assert made.status_code == 403 and PEOPLE_ONLY in shown_text(made.text)
    assert (
        await fetch(database_url, "SELECT count(*) FROM invitations WHERE email = $1", email) == 0
    )


async def test_an_owner_is_an_owner_in_every_project_and_a_removal_forgets_project_roles(
    base_url: str, database_url: str, organisation: str
) -> None:
    async with browser(base_url) as owner, browser(base_url) as person:
        csrf = await signed_in_owner(owner, database_url, organisation)
        _, them, _ = await joined(owner, csrf, person, "member")
        assert (await set_project_role(owner, csrf, them, "viewer")).status_code == 303
        assert (await person.get("/settings/members")).status_code == 403
        promoted = await owner.post(
            f"/settings/members/{them}/role", data={"role": "owner", "csrf_token": csrf}
        )
        assert promoted.status_code == 303
        assert (await person.get("/settings/members")).status_code == 200
        rows = "SELECT count(*) FROM project_roles WHERE user_id = $1"
        assert await fetch(database_url, rows, uuid.UUID(them)) == 0
        # A leftover row (written before owners cleared theirs) does not narrow an owner either.
        await fetch(
            database_url,
            "INSERT INTO project_roles (user_id, project_id, role) SELECT $1, p.id, 'viewer' "
            "FROM projects p JOIN memberships m ON m.organisation_id = p.organisation_id "
            "WHERE m.user_id = $1 RETURNING 1",
            uuid.UUID(them),
        )
        assert (await person.get("/settings/members")).status_code == 200
        demoted = await owner.post(
            f"/settings/members/{them}/role", data={"role": "member", "csrf_token": csrf}
        )
        assert demoted.status_code == 303
        removed = await owner.post(f"/settings/members/{them}/remove", data={"csrf_token": csrf})
        assert removed.status_code == 303
        assert await fetch(database_url, rows, uuid.UUID(them)) == 0
