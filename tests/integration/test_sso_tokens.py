"""Single sign-on's checks of what the provider answers, against a provider whose ID tokens the
test signs itself (tests/support/fake_idp.py): each refusal is a page saying so, in the audit
log as sign_in.failed (method sso, its reason) once the state matched its browser (before, in
the server's log alone), and never a token in any log; a first sign-in to an account someone
else set a password for takes it over whole."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import httpx
import msgspec
import pytest
import pytest_asyncio
from joserfc.jwk import RSAKey

from agentlasso.config import Settings
from agentlasso.server import create_app
from agentlasso.services import sso
from agentlasso.services.api_keys import create_key_for_project_name
from agentlasso.services.password_sign_in import NO_MATCH
from tests.support.accounts import PASSWORD, new_user_token, set_password, sign_in_with_password
from tests.support.fake_idp import CLIENT_ID, CLIENT_SECRET, FakeIdp, running_fake_idp
from tests.support.servers import free_socket, serving
from tests.support.web import SESSION_COOKIE, shown_text


@pytest.fixture(scope="module")
def idp() -> Iterator[FakeIdp]:
    with running_fake_idp() as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def organisation(database_url: str) -> str:
    """The organisation newcomers join (named, though others exist in the test database)."""
    name = f"sso-{uuid.uuid4().hex[:10]}"
    await create_key_for_project_name(database_url, name)
    return name


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def sso_url(settings: Settings, idp: FakeIdp, organisation: str) -> AsyncIterator[str]:
    configured = msgspec.structs.replace(
        settings, oidc_issuer=idp.issuer, oidc_client_id=CLIENT_ID,
        oidc_client_secret=CLIENT_SECRET, oidc_allowed_domains=("allowed.example",),
        oidc_organisation=organisation,
    )  # fmt: skip
    async with serving(create_app(configured)) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="session")
async def web(sso_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=sso_url, follow_redirects=False) as client:
        yield client


async def started(web: httpx.AsyncClient) -> dict[str, str]:
    """Start a sign-in; the authorization request's parameters."""
    answer = await web.get("/login/sso")
    assert answer.status_code == 303, answer.text
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    return {name: values[0] for name, values in query.items()}


async def finish(web: httpx.AsyncClient, idp: FakeIdp, state: str, token: str) -> httpx.Response:
    idp.id_token = token
    return await web.get("/login/sso/callback", params={"state": state, "code": "a-code"})


async def refused_with(
    web: httpx.AsyncClient, idp: FakeIdp, make: Any, reason: str
) -> httpx.Response:
    """Start, answer with the token `make(nonce)` gives; assert the refusal page."""
    request = await started(web)
    answer = await finish(web, idp, request["state"], make(request["nonce"]))
    assert answer.status_code in (401, 403), answer.text
    assert SESSION_COOKIE not in answer.cookies
    assert "You are not signed in" in answer.text
    assert sso.MESSAGES.get(reason, sso.REFUSED) in shown_text(answer.text)
    return answer


async def last_failure(database_url: str, organisation: str) -> dict[str, Any]:
    connection = await asyncpg.connect(database_url)
    try:
        row = await connection.fetchrow(
            "SELECT a.action, a.changes::text AS changes, a.actor::text AS actor FROM audit_log a"
            " JOIN projects p ON p.id = a.project_id WHERE p.name = $1"
            " ORDER BY a.seq DESC LIMIT 1",
            organisation,
        )
    finally:
        await connection.close()
    assert row is not None
    return {"action": row["action"], **msgspec.json.decode(row["changes"])}


async def test_authorization_request_uses_pkce_state_and_nonce(web: httpx.AsyncClient) -> None:
    request = await started(web)
    assert request["response_type"] == "code"
    assert request["code_challenge_method"] == "S256"
    assert len(request["code_challenge"]) == 43
    assert request["state"] != request["nonce"]
    assert request["redirect_uri"].endswith("/login/sso/callback")
    assert "openid" in request["scope"].split()


async def test_a_good_token_signs_in_a_viewer_with_pkce(
    web: httpx.AsyncClient, idp: FakeIdp, database_url: str, organisation: str
) -> None:
    request = await started(web)
    subject = f"good-{uuid.uuid4().hex[:8]}"
    email = f"{subject}@allowed.example"
    token = idp.sign(idp.claims(request["nonce"], sub=subject, email=email))
    answer = await finish(web, idp, request["state"], token)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/"
    assert SESSION_COOKIE in answer.cookies
    sent = idp.token_requests[-1]
    assert sent["code_verifier"] and sent["authorization"].startswith("Basic ")
    connection = await asyncpg.connect(database_url)
    try:
        role = await connection.fetchval(
            "SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id"
            " JOIN organisations o ON o.id = m.organisation_id WHERE u.email = $1 AND o.name = $2",
            email, organisation,
        )  # fmt: skip
    finally:
        await connection.close()
    assert role == "viewer"
    entry = await last_failure(database_url, organisation)
    assert entry["action"] == "sign_in.succeeded" and entry["method"] == "sso"


async def test_a_replayed_state_is_refused(web: httpx.AsyncClient, idp: FakeIdp) -> None:
    request = await started(web)
    token = idp.sign(idp.claims(request["nonce"]))
    assert (await finish(web, idp, request["state"], token)).status_code == 303
    again = await finish(web, idp, request["state"], token)
    assert again.status_code == 403
    assert sso.MESSAGES["unknown_state"] in shown_text(again.text)


async def test_a_tampered_token_is_refused(
    web: httpx.AsyncClient, idp: FakeIdp, database_url: str, organisation: str, caplog: Any
) -> None:
    def tampered(nonce: str) -> str:
        header, payload, signature = idp.sign(idp.claims(nonce)).split(".")
        other = idp.sign(idp.claims(nonce, sub="someone-else")).split(".")[1]
        return f"{header}.{other}.{signature}" if other != payload else "x"

    with caplog.at_level(logging.DEBUG):
        await refused_with(web, idp, tampered, "bad_signature")
    assert idp.id_token not in caplog.text
    entry = await last_failure(database_url, organisation)
    assert entry == {"action": "sign_in.failed", "method": "sso", "reason": "bad_signature"}


async def test_a_token_signed_by_another_key_is_refused(
    web: httpx.AsyncClient, idp: FakeIdp
) -> None:
    stranger = RSAKey.generate_key(2048, parameters={"kid": "k1"})
    await refused_with(web, idp, lambda n: idp.sign(idp.claims(n), stranger), "bad_signature")


async def test_a_wrong_nonce_is_refused(
    web: httpx.AsyncClient, idp: FakeIdp, database_url: str, organisation: str
) -> None:
    await refused_with(web, idp, lambda n: idp.sign(idp.claims("not-" + n)), "wrong_nonce")
    assert (await last_failure(database_url, organisation))["reason"] == "wrong_nonce"


async def test_an_expired_token_is_refused(
    web: httpx.AsyncClient, idp: FakeIdp, database_url: str, organisation: str
) -> None:
    await refused_with(web, idp, lambda n: idp.sign(idp.claims(n, exp=1_700_000_000)), "expired")
    assert (await last_failure(database_url, organisation))["reason"] == "expired_token"


async def test_a_wrong_audience_is_refused(
    web: httpx.AsyncClient, idp: FakeIdp, database_url: str, organisation: str
) -> None:
    await refused_with(web, idp, lambda n: idp.sign(idp.claims(n, aud="another-app")), "aud")
    assert (await last_failure(database_url, organisation))["reason"] == "wrong_audience"


async def test_a_wrong_issuer_is_refused(web: httpx.AsyncClient, idp: FakeIdp) -> None:
    await refused_with(web, idp, lambda n: idp.sign(idp.claims(n, iss="http://evil")), "iss")


async def test_an_unverified_email_is_refused(
    web: httpx.AsyncClient, idp: FakeIdp, database_url: str, organisation: str
) -> None:
    make = lambda n: idp.sign(idp.claims(n, sub="unverified-1", email_verified=False))  # noqa: E731
    await refused_with(web, idp, make, "unverified_email")
    entry = await last_failure(database_url, organisation)
    assert entry["reason"] == "unverified_email"


async def test_a_disallowed_domain_is_refused(web: httpx.AsyncClient, idp: FakeIdp) -> None:
    make = lambda n: idp.sign(idp.claims(n, sub="other-1", email="eve@elsewhere.example"))  # noqa: E731
    answer = await refused_with(web, idp, make, "domain_not_allowed")
    assert "elsewhere.example" not in answer.text


async def test_a_sign_in_from_another_browser_is_refused(
    web: httpx.AsyncClient, idp: FakeIdp, sso_url: str
) -> None:
    request = await started(web)
    idp.id_token = idp.sign(idp.claims(request["nonce"]))
    async with httpx.AsyncClient(base_url=sso_url) as other:
        answer = await other.get("/login/sso/callback", params={"state": request["state"]})
    assert answer.status_code == 403
    assert sso.MESSAGES["other_browser"] in shown_text(answer.text)


async def test_a_changed_email_cannot_take_over_another_account(
    web: httpx.AsyncClient, idp: FakeIdp
) -> None:
    victim = f"victim-{uuid.uuid4().hex[:8]}@allowed.example"
    request = await started(web)
    token = idp.sign(idp.claims(request["nonce"], sub="victim-sub", email=victim))
    assert (await finish(web, idp, request["state"], token)).status_code == 303
    # Another identity at the provider now claims the victim's (verified) email.
    make = lambda n: idp.sign(idp.claims(n, sub="attacker-sub", email=victim))  # noqa: E731
    await refused_with(web, idp, make, "email_taken")
    # The victim's own identity still signs in, whatever email it carries now.
    request = await started(web)
    token = idp.sign(idp.claims(request["nonce"], sub="victim-sub", email="new@elsewhere.example"))
    assert (await finish(web, idp, request["state"], token)).status_code == 303


async def test_a_sign_in_goes_back_to_where_it_was_asked_for(
    web: httpx.AsyncClient, idp: FakeIdp
) -> None:
    answer = await web.get("/login/sso", params={"next": "/datasets"})
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    token = idp.sign(idp.claims(query["nonce"][0]))
    signed_in = await finish(web, idp, query["state"][0], token)
    assert signed_in.headers["location"] == "/datasets"
    elsewhere = await web.get("/login/sso", params={"next": "//evil.example/"})
    query = parse_qs(urlsplit(elsewhere.headers["location"]).query)
    token = idp.sign(idp.claims(query["nonce"][0]))
    assert (await finish(web, idp, query["state"][0], token)).headers["location"] == "/"


async def test_without_settings_there_is_no_sso(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as plain:
        login = await plain.get("/login")
        assert "Sign in with SSO" not in login.text
        start = await plain.get("/login/sso", follow_redirects=False)
        callback = await plain.get("/login/sso/callback", params={"state": "x", "code": "y"})
    assert start.status_code == 404
    assert callback.status_code == 404
    assert "not set up on this server" in shown_text(start.text)


async def test_the_login_page_offers_sso(web: httpx.AsyncClient) -> None:
    login = await web.get("/login", params={"next": "/runs"})
    assert 'href="/login/sso?next=/runs"' in login.text


async def test_an_unreachable_provider_is_a_page_saying_so(settings: Settings) -> None:
    closed = free_socket()  # bound, never listening: connections to it are refused
    issuer = f"http://127.0.0.1:{closed.getsockname()[1]}"
    configured = msgspec.structs.replace(
        settings, oidc_issuer=issuer, oidc_client_id=CLIENT_ID, oidc_client_secret=CLIENT_SECRET
    )
    try:
        async with serving(create_app(configured)) as url, httpx.AsyncClient(base_url=url) as web:
            answer = await web.get("/login/sso", follow_redirects=False)
    finally:
        closed.close()
    assert answer.status_code == 503
    assert sso.MESSAGES["provider_unreachable"] in shown_text(answer.text)


AUDIT_ROWS = """
SELECT count(*) FROM audit_log a JOIN projects p ON p.id = a.project_id WHERE p.name = $1
"""


async def test_a_first_sso_sign_in_takes_over_a_password_account_whole(
    web: httpx.AsyncClient, idp: FakeIdp, database_url: str, organisation: str, sso_url: str
) -> None:
    email = f"ceo-{uuid.uuid4().hex[:8]}@allowed.example"
    # An inviter (or an operator) made the account, set its password, and keeps a session.
    async with httpx.AsyncClient(base_url=sso_url) as inviter:
        token = await new_user_token(database_url, email, organisation)
        assert (await set_password(inviter, token, PASSWORD)).status_code == 303
        assert (await inviter.get("/datasets")).status_code == 200
        connection = await asyncpg.connect(database_url)
        try:
            user_id = await connection.fetchval("SELECT id FROM users WHERE email = $1", email)
            await connection.execute(
                "INSERT INTO password_tokens (token_hash, user_id, expires_at)"
                " VALUES ($1, $2, now() + interval '1 day')",
                uuid.uuid4().bytes, user_id,
            )  # fmt: skip
        finally:
            await connection.close()
        request = await started(web)
        subject = f"ceo-{uuid.uuid4().hex[:6]}"
        claims = idp.claims(request["nonce"], sub=subject, email=email)
        answer = await finish(web, idp, request["state"], idp.sign(claims))
        assert answer.status_code == 303 and SESSION_COOKIE in answer.cookies
        ended = await inviter.get("/datasets", follow_redirects=False)
        assert ended.status_code == 303 and ended.headers["location"].startswith("/login")
        again = await sign_in_with_password(inviter, email, PASSWORD)
        assert again.status_code == 401 and NO_MATCH in shown_text(again.text)
    connection = await asyncpg.connect(database_url)
    try:
        row = await connection.fetchrow(
            "SELECT password_hash, (SELECT count(*) FROM password_tokens t WHERE t.user_id = u.id"
            " AND t.used_at IS NULL) AS open_links FROM users u WHERE u.id = $1",
            user_id,
        )
        assert row["password_hash"] is None and row["open_links"] == 0
        entry = await connection.fetchrow(
            "SELECT changes FROM audit_log WHERE action = 'user.sso_linked'"
            " AND object_id = $1", str(user_id),
        )  # fmt: skip
    finally:
        await connection.close()
    assert entry is not None
    changes = entry["changes"]
    changes = json.loads(changes) if isinstance(changes, str) else changes
    assert changes["email"] == email and changes["password_cleared"] is True
    assert changes["links_spent"] == 1 and changes["sessions_ended"] == 1
    # The person signs in with SSO again as the same user.
    request = await started(web)
    claims = idp.claims(request["nonce"], sub=subject, email=email)
    assert (await finish(web, idp, request["state"], idp.sign(claims))).status_code == 303


async def test_a_callback_nobody_started_here_writes_nothing_to_the_audit_log(
    web: httpx.AsyncClient, idp: FakeIdp, sso_url: str, database_url: str, organisation: str
) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        before = await connection.fetchval(AUDIT_ROWS, organisation)
        async with httpx.AsyncClient(base_url=sso_url) as anyone:
            for n in range(20):
                junk = await anyone.get("/login/sso/callback", params={"state": f"junk{n}"})
                assert junk.status_code == 403
                assert sso.MESSAGES["unknown_state"] in shown_text(junk.text)
            request = await started(web)
            other = await anyone.get("/login/sso/callback", params={"state": request["state"]})
            assert sso.MESSAGES["other_browser"] in shown_text(other.text)
        assert await connection.fetchval(AUDIT_ROWS, organisation) == before
        # Once a state matched its browser, a refusal is recorded.
        request = await started(web)
        claims = idp.claims(
            request["nonce"], sub=f"new-{uuid.uuid4().hex[:6]}", email_verified=False,
            email=f"new-{uuid.uuid4().hex[:6]}@allowed.example",
        )  # fmt: skip
        refused = await finish(web, idp, request["state"], idp.sign(claims))
        assert sso.MESSAGES["unverified_email"] in shown_text(refused.text)
        assert await connection.fetchval(AUDIT_ROWS, organisation) == before + 1
    finally:
        await connection.close()
