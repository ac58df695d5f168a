"""Users with passwords over real HTTP: made by the CLI, a one-time link sets the password,
sign-in never tells whether an email has an account, lockout, and sessions that end with the
membership."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import httpx
import msgspec
import pytest

from agentlasso.cli.main import main
from agentlasso.config import Settings
from agentlasso.server import create_app
from agentlasso.services.accounts import remove_member
from agentlasso.services.api_keys import create_key_for_project_name
from agentlasso.services.password_sign_in import LOCK_AFTER_FAILURES, LOCKED, NO_MATCH
from agentlasso.services.web_sessions import token_hash
from tests.support.accounts import (
    PASSWORD,
    new_email,
    new_user_token,
    set_password,
    sign_in_with_password,
    token_of,
)
from tests.support.servers import serving
from tests.support.web import browser, hidden_field, shown_text, sign_in


async def test_a_user_the_cli_made_sets_a_password_once_then_signs_in_to_their_project(
    base_url: str,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    email, organisation = new_email(), f"acme-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("DATABASE_URL", database_url)
    code = await asyncio.to_thread(
        main, ["users", "create", "--email", email, "--org", organisation, "--role", "owner"]
    )
    printed = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and "works once, within 7 days" in printed[0]
    link = printed[-1]
    assert link.startswith("http://127.0.0.1:8000/set-password?token=")
    # The organisation's project is the one a key of that name works on.
    key = (await create_key_for_project_name(database_url, organisation)).key
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}) as api:
        made = await api.post("/api/v1/datasets", json={"name": "Refund questions"})
        assert made.status_code == 201, made.text

    async with browser(base_url) as web:
        opened = await web.get("/set-password", params={"token": token_of(link)})
        assert opened.status_code == 200 and email in shown_text(opened.text)
        short = await set_password(web, token_of(link), "too short")
        assert short.status_code == 422 and "at least 12 characters" in shown_text(short.text)
        differ = await set_password(web, token_of(link), PASSWORD, again=PASSWORD + "!")
        assert differ.status_code == 422 and "not the same" in shown_text(differ.text)
        done = await set_password(web, token_of(link), PASSWORD)
        assert done.status_code == 303 and done.headers["location"] == "/"
        listing = await web.get("/datasets")
        assert listing.status_code == 200 and "Refund questions" in shown_text(listing.text)

    async with browser(base_url) as web:
        again = await web.get("/set-password", params={"token": token_of(link)})
        assert again.status_code == 401 and "has been used or has expired" in again.text
        signed_in = await sign_in_with_password(web, email.upper(), PASSWORD)
        assert signed_in.status_code == 303, signed_in.text
        listing = await web.get("/datasets")
        assert "Refund questions" in shown_text(listing.text)


async def test_the_cli_refuses_an_email_that_has_a_user(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    email = new_email()
    await new_user_token(database_url, email, f"org-{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("DATABASE_URL", database_url)
    argv = ["users", "create", "--email", email.title(), "--org", "other", "--role", "viewer"]
    assert await asyncio.to_thread(main, argv) == 1
    assert "already exists" in capsys.readouterr().err


async def test_a_wrong_password_and_an_unknown_email_are_refused_in_the_same_words(
    base_url: str, database_url: str
) -> None:
    email, not_set = new_email(), new_email()
    token = await new_user_token(database_url, email, f"org-{uuid.uuid4().hex[:8]}")
    await new_user_token(database_url, not_set, f"org-{uuid.uuid4().hex[:8]}")
    async with browser(base_url) as web:
        await set_password(web, token, PASSWORD)
    async with browser(base_url) as web:
        wrong = await sign_in_with_password(web, email, PASSWORD + " nope")
        unknown = await sign_in_with_password(web, new_email(), PASSWORD)
        no_password_yet = await sign_in_with_password(web, not_set, PASSWORD)
    for answer in (wrong, unknown, no_password_yet):
        assert answer.status_code == 401
        assert NO_MATCH in shown_text(answer.text)
    assert "agentlasso_session" not in web.cookies


async def test_five_failures_lock_an_address_for_15_minutes_known_or_not(
    base_url: str, database_url: str
) -> None:
    email, nobody = new_email(), new_email()
    token = await new_user_token(database_url, email, f"org-{uuid.uuid4().hex[:8]}")
    async with browser(base_url) as web:
        await set_password(web, token, PASSWORD)
    async with browser(base_url) as web:
        for address in (email, nobody):
            said = [
                shown_text((await sign_in_with_password(web, address, "wrong password!")).text)
                for _ in range(5)
            ]
            assert all(NO_MATCH in text for text in said[:4]) and LOCKED in said[4]
        # Locked: even the right password is refused, in the words an unknown address gets.
        right = await sign_in_with_password(web, email, PASSWORD)
        assert right.status_code == 401 and LOCKED in shown_text(right.text)
        assert LOCKED in shown_text((await sign_in_with_password(web, nobody, PASSWORD)).text)
        locked_for = await _locked_for_s(database_url, email)
        assert 14 * 60 < locked_for <= 15 * 60
        await _pass_the_lock(database_url, email)
        assert (await sign_in_with_password(web, email, PASSWORD)).status_code == 303


async def test_a_used_or_expired_set_password_link_is_refused(
    base_url: str, database_url: str
) -> None:
    expired = await new_user_token(database_url, new_email(), f"org-{uuid.uuid4().hex[:8]}")
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "UPDATE password_tokens SET expires_at = now() - interval '1 second'"
            " WHERE token_hash = $1",
            token_hash(expired),
        )
    finally:
        await connection.close()
    async with browser(base_url) as web:
        opened = await web.get("/set-password", params={"token": expired})
        assert opened.status_code == 401 and "has been used or has expired" in opened.text
        posted = await web.post(
            "/set-password",
            data={"token": expired, "password": PASSWORD, "password_again": PASSWORD},
        )
        assert posted.status_code == 401 and "agentlasso_session" not in web.cookies


async def test_ending_a_membership_ends_the_members_sessions_at_once(
    base_url: str, database_url: str
) -> None:
    email, organisation = new_email(), f"org-{uuid.uuid4().hex[:8]}"
    token = await new_user_token(database_url, email, organisation)
    async with browser(base_url) as web, browser(base_url) as other:
        await set_password(web, token, PASSWORD)
        assert (await sign_in_with_password(other, email, PASSWORD)).status_code == 303
        assert (await web.get("/datasets")).status_code == 200
        assert (await other.get("/datasets")).status_code == 200
        connection = await asyncpg.connect(database_url)
        try:
            row = await connection.fetchrow(
                "SELECT m.user_id, m.organisation_id FROM memberships m"
                " JOIN users u ON u.id = m.user_id WHERE u.email = $1",
                email,
            )
            assert row is not None
            user_id, organisation_id = row["user_id"], row["organisation_id"]
            assert await remove_member(connection, user_id, organisation_id)
            left = await connection.fetchval(
                "SELECT count(*) FROM web_sessions WHERE user_id = $1", user_id
            )
        finally:
            await connection.close()
        assert left == 0
        for gone in (web, other):
            page = await gone.get("/datasets")
            assert page.status_code == 303 and page.headers["location"].startswith("/login")
        refused = await sign_in_with_password(web, email, PASSWORD)
        assert refused.status_code == 401


async def test_a_users_sessions_share_one_page_rate(settings: Settings, database_url: str) -> None:
    email, organisation = new_email(), f"org-{uuid.uuid4().hex[:8]}"
    token = await new_user_token(database_url, email, organisation)
    key = (await create_key_for_project_name(database_url, organisation)).key
    limited = msgspec.structs.replace(settings, web_rate_limit_per_s=0.2, web_rate_limit_burst=4)
    async with (
        serving(create_app(limited)) as url,
        browser(url) as laptop,
        browser(url) as phone,
        browser(url) as with_key,
    ):
        await set_password(laptop, token, PASSWORD)
        await sign_in_with_password(phone, email, PASSWORD)
        await sign_in(with_key, key)
        pages = [(await each.get("/datasets")).status_code for each in (laptop, phone) * 2]
        refused = await phone.get("/datasets")
        other = await with_key.get("/datasets")
    assert pages == [200, 200, 200, 200]
    assert refused.status_code == 429 and "retry-after" in refused.headers
    assert other.status_code == 200, "a session opened with the project's key has its own"


async def _locked_for_s(database_url: str, email: str) -> float:
    connection = await asyncpg.connect(database_url)
    try:
        seconds: float = await connection.fetchval(
            "SELECT extract(epoch FROM locked_until - now()) FROM sign_in_failures"
            " WHERE email = lower($1)",
            email,
        )
        return seconds
    finally:
        await connection.close()


async def _pass_the_lock(database_url: str, email: str) -> None:
    """Fifteen minutes on: the lock is behind the address."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "UPDATE sign_in_failures SET locked_until = now() - interval '1 second',"
            " first_failed_at = now() - interval '16 minutes' WHERE email = lower($1)",
            email,
        )
    finally:
        await connection.close()


async def test_guesses_sent_at_once_get_no_more_than_the_five_a_lockout_allows(
    base_url: str, database_url: str
) -> None:
    email = new_email()
    async with browser(base_url) as web:
        token = await new_user_token(database_url, email, f"team-{uuid.uuid4().hex[:8]}")
        assert (await set_password(web, token, PASSWORD)).status_code == 303
    async with browser(base_url) as attacker:
        form_token = hidden_field((await attacker.get("/login")).text, "login_token")

        async def guess(n: int) -> str:
            answer = await attacker.post(
                "/login/password",
                data={"email": email, "password": f"wrong-{n:04d}", "login_token": form_token},
            )
            said = shown_text(answer.text)
            return "no_match" if NO_MATCH in said else "locked" if LOCKED in said else said

        said = await asyncio.gather(*(guess(n) for n in range(40)))
        assert said.count("no_match") + said.count("locked") == 40, set(said)
        # Four refusals say "do not match", the fifth locks: only five were really checked.
        assert said.count("no_match") <= LOCK_AFTER_FAILURES - 1, said.count("no_match")
        right = await sign_in_with_password(attacker, email, PASSWORD)
        assert right.status_code == 401 and LOCKED in shown_text(right.text)
