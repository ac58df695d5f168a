"""Settings -> Members over real HTTP: inviting with a one-time link that keeps only its hash,
joining with the role, changing roles under the owner rules, removing a member (their sessions
end at once), CSRF on every form, and the audit log's entries."""

from __future__ import annotations

import re
import uuid

import asyncpg
import httpx
import pytest

from agentlasso.services.members import LAST_OWNER, OWNER_EVERYWHERE, OWNERS_ONLY
from agentlasso.services.web_sessions import token_hash
from tests.support.accounts import PASSWORD, new_email, new_user_token, set_password, token_of
from tests.support.web import browser, csrf_token, hidden_field, shown_text

LINK = re.compile(r'id="invite_link"[^>]*value="([^"]+)"')


async def signed_in_owner(web: httpx.AsyncClient, database_url: str, org: str) -> str:
    """A new owner of the organisation, signed in on `web`; their CSRF token."""
    answer = await set_password(web, await new_user_token(database_url, new_email(), org), PASSWORD)
    assert answer.status_code == 303, answer.text
    return await csrf_token(web)


async def invite(web: httpx.AsyncClient, csrf: str, email: str, role: str) -> httpx.Response:
    return await web.post(
        "/settings/members/invite", data={"email": email, "role": role, "csrf_token": csrf}
    )


async def accept(web: httpx.AsyncClient, link: str) -> str:
    """Follow an invitation's link and set a password, signed in on `web`; its CSRF token."""
    answer = await set_password(web, token_of(link), PASSWORD)
    assert answer.status_code == 303, answer.text
    return await csrf_token(web)


def member_id(page: str, email: str) -> str:
    found = re.search(
        rf'data-email="{re.escape(email)}">.*?/settings/members/([0-9a-f-]{{36}})/role', page, re.S
    )
    assert found, f"{email} is not listed"
    return found.group(1)


@pytest.fixture
def organisation() -> str:
    return f"team-{uuid.uuid4().hex[:12]}"


async def test_an_invitation_joins_with_its_role_once_and_keeps_only_the_tokens_hash(
    base_url: str, database_url: str, organisation: str
) -> None:
    email = new_email()
    async with browser(base_url) as owner:
        csrf = await signed_in_owner(owner, database_url, organisation)
        invited = await invite(owner, csrf, email, "viewer")
        assert invited.status_code == 200, invited.text
        assert invited.headers["referrer-policy"] == "no-referrer"
        link = LINK.search(invited.text).group(1)  # type: ignore[union-attr]
        assert link.startswith(f"{base_url}/set-password?token=")
        connection = await asyncpg.connect(database_url)
        try:
            row = await connection.fetchrow("SELECT * FROM invitations WHERE email = $1", email)
            assert row["token_hash"] == token_hash(token_of(link)) and row["role"] == "viewer"
            assert token_of(link) not in str(dict(row))
            entry = await connection.fetchrow(
                "SELECT * FROM audit_log WHERE action = 'member.invited' ORDER BY seq DESC LIMIT 1"
            )
            assert token_of(link) not in str(dict(entry))
        finally:
            await connection.close()
        async with browser(base_url) as web:
            await accept(web, link)
            assert (await web.get("/datasets")).status_code == 200
            refused = await web.get("/settings/members")
            assert refused.status_code == 403
            assert 'needs the role "admin" or above' in shown_text(refused.text)
        async with browser(base_url) as again:
            spent = await again.get("/set-password", params={"token": token_of(link)})
            assert spent.status_code == 401 and "has been used" in shown_text(spent.text)
        listing = await owner.get("/settings/members")
        assert email in listing.text and "viewer" in listing.text


async def test_an_email_with_an_account_cannot_be_invited_and_a_role_must_be_one(
    base_url: str, database_url: str, organisation: str
) -> None:
    async with browser(base_url) as owner:
        csrf = await signed_in_owner(owner, database_url, organisation)
        taken = new_email()
        await new_user_token(database_url, taken, f"elsewhere-{uuid.uuid4().hex[:8]}")
        answer = await invite(owner, csrf, taken, "member")
        assert answer.status_code == 409 and "already has an account" in shown_text(answer.text)
        wrong = await invite(owner, csrf, new_email(), "superuser")
        assert wrong.status_code == 422 and "Choose a role" in shown_text(wrong.text)
        bad_email = await invite(owner, csrf, "not an email", "member")
        assert bad_email.status_code == 422 and "Give an email address" in shown_text(
            bad_email.text
        )
        forged = await owner.post(
            "/settings/members/invite", data={"email": new_email(), "role": "member"}
        )
        assert forged.status_code == 403


async def test_only_an_owner_grants_owner_and_the_last_owner_stays(
    base_url: str, database_url: str, organisation: str
) -> None:
    admin_email = new_email()
    async with browser(base_url) as owner:
        csrf = await signed_in_owner(owner, database_url, organisation)
        owner_email = re.search(
            r'data-email="([^"]+)"', (await owner.get("/settings/members")).text
        )
        assert owner_email is not None
        admin_link = LINK.search((await invite(owner, csrf, admin_email, "admin")).text)
        assert admin_link is not None
        async with browser(base_url) as admin:
            admin_csrf = await accept(admin, admin_link.group(1))
            made = await invite(admin, admin_csrf, new_email(), "owner")
            assert made.status_code == 403 and OWNERS_ONLY in shown_text(made.text)
            listing = (await admin.get("/settings/members")).text
            me, them = member_id(listing, admin_email), member_id(listing, owner_email.group(1))
            for target, role in ((me, "owner"), (them, "viewer")):
                refused = await admin.post(
                    f"/settings/members/{target}/role",
                    data={"role": role, "csrf_token": admin_csrf},
                )
                assert refused.status_code == 403 and OWNERS_ONLY in shown_text(refused.text)
            removing = await admin.post(
                f"/settings/members/{them}/remove", data={"csrf_token": admin_csrf}
            )
            assert removing.status_code == 403
        demote = await owner.post(
            f"/settings/members/{them}/role", data={"role": "admin", "csrf_token": csrf}
        )
        assert demote.status_code == 409 and LAST_OWNER in shown_text(demote.text)
        leave = await owner.post(f"/settings/members/{them}/remove", data={"csrf_token": csrf})
        assert leave.status_code == 409 and LAST_OWNER in shown_text(leave.text)
        changed = await owner.post(
            f"/settings/members/{me}/role", data={"role": "member", "csrf_token": csrf}
        )
        assert changed.status_code == 303
        log = shown_text((await owner.get("/settings/audit-log?action=member.role_changed")).text)
        assert "old role: admin" in log and "new role: member" in log
        assert owner_email.group(1) in log


async def test_a_removed_member_is_signed_out_at_their_next_request(
    base_url: str, database_url: str, organisation: str
) -> None:
    email = new_email()
    async with browser(base_url) as owner:
        csrf = await signed_in_owner(owner, database_url, organisation)
        link = LINK.search((await invite(owner, csrf, email, "member")).text).group(1)  # type: ignore[union-attr]
        async with browser(base_url) as web:
            await accept(web, link)
            assert (await web.get("/datasets")).status_code == 200
            member = member_id((await owner.get("/settings/members")).text, email)
            gone = await owner.post(f"/settings/members/{member}/remove", data={"csrf_token": csrf})
            assert gone.status_code == 303
            connection = await asyncpg.connect(database_url)
            try:
                left = await connection.fetchval(
                    "SELECT count(*) FROM web_sessions WHERE user_id = $1", uuid.UUID(member)
                )
            finally:
                await connection.close()
            assert left == 0
            after = await web.get("/datasets")
            assert after.status_code in (302, 303) and "/login" in after.headers["location"]
        log = shown_text((await owner.get("/settings/audit-log?action=member.removed")).text)
        assert email in log
        assert hidden_field((await owner.get("/settings/members")).text, "csrf_token") == csrf


async def test_a_members_role_in_this_project_is_set_apart_from_the_organisations(
    base_url: str, database_url: str, organisation: str
) -> None:
    email = new_email()
    async with browser(base_url) as owner, browser(base_url) as web:
        csrf = await signed_in_owner(owner, database_url, organisation)
        link = LINK.search((await invite(owner, csrf, email, "viewer")).text).group(1)  # type: ignore[union-attr]
        viewer_csrf = await accept(web, link)
        dataset = {"name": "Refunds", "csrf_token": viewer_csrf}
        assert (await web.post("/datasets", data=dataset)).status_code == 403
        member = member_id((await owner.get("/settings/members")).text, email)
        url = f"/settings/members/{member}/project-role"

        widened = await owner.post(url, data={"project_role": "member", "csrf_token": csrf})
        assert widened.status_code == 303, widened.text
        assert (await web.post("/datasets", data=dataset)).status_code == 303
        listing = (await owner.get("/settings/members")).text
        assert re.search(
            rf'id="project-role-{member}" name="project_role">.*?'
            r'<option value="member" selected>Member</option>', listing, re.S,
        ), "the project role is shown"  # fmt: skip

        cleared = await owner.post(url, data={"project_role": "", "csrf_token": csrf})
        assert cleared.status_code == 303
        assert (await web.post("/datasets", data=dataset)).status_code == 403

        bad = await owner.post(url, data={"project_role": "boss", "csrf_token": csrf})
        assert bad.status_code == 422 and "Choose a role" in shown_text(bad.text)
        forged = await owner.post(url, data={"project_role": "member"})
        assert forged.status_code == 403
        # The owner's row shows no project form; their id is in their role form's action.
        own_id = re.search(  # type: ignore[union-attr]
            r'members/([0-9a-f-]{36})/role"(?:(?!</tr>).)*Owner \(every project\)', listing, re.S
        ).group(1)
        kept = await owner.post(
            f"/settings/members/{own_id}/project-role",
            data={"project_role": "viewer", "csrf_token": csrf},
        )
        assert kept.status_code == 409 and OWNER_EVERYWHERE in shown_text(kept.text)
        log = shown_text(
            (await owner.get("/settings/audit-log?action=member.project_role_changed")).text
        )
        assert email in log


async def test_another_organisations_member_is_not_found(
    base_url: str, database_url: str, organisation: str
) -> None:
    async with browser(base_url) as owner, browser(base_url) as stranger:
        await signed_in_owner(owner, database_url, organisation)
        listing = (await owner.get("/settings/members")).text
        mine = member_id(listing, re.search(r'data-email="([^"]+)"', listing).group(1))  # type: ignore[union-attr]
        their_csrf = await signed_in_owner(stranger, database_url, f"rival-{uuid.uuid4().hex[:8]}")
        actions = (("role", {"role": "viewer"}), ("project-role", {"project_role": "member"}))
        for action, data in (*actions, ("remove", {})):
            answer = await stranger.post(
                f"/settings/members/{mine}/{action}", data={**data, "csrf_token": their_csrf}
            )
            assert answer.status_code == 404, answer.text
        assert mine in (await owner.get("/settings/members")).text
