"""The audit log names people: a password sign-in and a set-password link's are `user` entries,
a refused password is in no project's log, and Settings -> Audit log shows the email."""

from __future__ import annotations

import uuid

import httpx

from agentlasso.services.api_keys import create_key_for_project_name
from tests.integration.test_audit_log import audit_entries
from tests.support.accounts import (
    PASSWORD,
    new_email,
    new_user_token,
    set_password,
    sign_in_with_password,
)
from tests.support.web import browser, shown_text


async def test_a_persons_sign_ins_are_recorded_with_them_as_actor(
    base_url: str, database_url: str
) -> None:
    email, organisation = new_email(), f"acme-{uuid.uuid4().hex[:8]}"
    token = await new_user_token(database_url, email, organisation)
    key = (await create_key_for_project_name(database_url, organisation)).key
    async with browser(base_url) as web:
        assert (await set_password(web, token, PASSWORD)).status_code == 303
    async with browser(base_url) as web:
        refused = await sign_in_with_password(web, email, PASSWORD + " but wrong")
        assert refused.status_code == 401
        assert (await sign_in_with_password(web, email.upper(), PASSWORD)).status_code == 303
        log_page = await web.get("/settings/audit-log", params={"actor": email})
        assert log_page.status_code == 200 and email in shown_text(log_page.text)

    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}) as api:
        entries = await audit_entries(api, action="sign_in.succeeded")
        by_email = await audit_entries(api, actor=email)
        failed = await audit_entries(api, action="sign_in.failed")
    # Newest first: the password sign-in, then the one the set-password link opened.
    assert [entry["changes"] for entry in entries] == [
        {"method": "password"},
        {"method": "set_password_link"},
    ]
    actors = [entry["actor"] for entry in entries]
    assert all(actor["kind"] == "user" and actor["email"] == email for actor in actors)
    assert actors[0]["id"] == actors[1]["id"]
    assert all(entry["ip"] == "127.0.0.1" for entry in entries)
    assert [entry["seq"] for entry in by_email] == [entry["seq"] for entry in entries]
    # A wrong password names no project: no log is written (the server's log has a warning).
    assert failed == []
