"""Text a client sends where the server compares a secret or writes a header: never a 500.

A secret compared with `hmac.compare_digest` on `str` raises for anything but ASCII, and a
header value the server builds must encode as Latin-1: a client's non-ASCII text in either
place is refused (or made safe), as any other wrong value is.
"""

from __future__ import annotations

import httpx
import pytest

from tests.support.api import create_dataset
from tests.support.assertions import assert_problem
from tests.support.web import browser, hidden_field, lands_on, path_of, shown_text

NON_ASCII = ["é", "日本語", "\u200b"]


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    """The API as `agentlasso api` serves it, in a process of its own."""
    return api_process_url


def utf8(text: str) -> bytes:
    """A header value as a client that sends UTF-8 bytes writes it."""
    return text.encode("utf-8")


@pytest.mark.parametrize("text", NON_ASCII)
async def test_a_non_ascii_api_key_is_401(anonymous: httpx.AsyncClient, text: str) -> None:
    for headers in (
        {"x-api-key": utf8(f"al_{text}")},
        {"authorization": utf8(f"Bearer al_{text}")},
    ):
        assert_problem(await anonymous.get("/api/v1/datasets", headers=headers), 401)


@pytest.mark.parametrize("text", NON_ASCII)
async def test_a_non_ascii_csrf_token_is_refused(web: httpx.AsyncClient, text: str) -> None:
    by_field = await web.post("/datasets", data={"csrf_token": text, "name": "forged"})
    assert by_field.status_code == 403, by_field.text
    by_header = await web.post(
        "/datasets", data={"name": "forged"}, headers={"x-csrf-token": utf8(text)}
    )
    assert by_header.status_code == 403, by_header.text


@pytest.mark.parametrize("text", NON_ASCII)
async def test_a_non_ascii_sign_in_form_token_is_refused(
    base_url: str, api_key: str, text: str
) -> None:
    async with browser(base_url) as web:
        await web.get("/login")
        answer = await web.post("/login", data={"api_key": api_key, "login_token": text})
        assert answer.status_code == 403, answer.text
        assert "This sign-in form is out of date" in shown_text(answer.text)
    async with browser(base_url) as web:
        form = await web.get("/login")
        fields = {"api_key": api_key, "login_token": hidden_field(form.text, "login_token")}
        cookie = utf8(f"agentlasso_login={text}")
        answer = await web.post("/login", data=fields, headers={"cookie": cookie})
        assert answer.status_code == 403, answer.text


@pytest.mark.parametrize("text", [*NON_ASCII, "%ED%A0%80"])
async def test_a_non_ascii_sign_in_link_token_signs_nobody_in(base_url: str, text: str) -> None:
    async with browser(base_url) as web:
        answer = await web.get(f"/login?token={text}")
        assert answer.status_code in (400, 401), answer.text
        assert "agentlasso_session" not in answer.headers.get("set-cookie", "")


@pytest.mark.parametrize("text", NON_ASCII)
async def test_a_non_ascii_session_cookie_leads_to_sign_in(base_url: str, text: str) -> None:
    async with browser(base_url) as web:
        answer = await web.get("/datasets", headers={"cookie": utf8(f"agentlasso_session={text}")})
        assert answer.status_code == 303, answer.text
        assert path_of(answer).startswith("/login")


@pytest.mark.parametrize("target", ["/datasets/日本語", "/datasets?q=café", "/\u2028x"])
async def test_a_non_latin1_next_is_kept_percent_encoded(
    base_url: str, api_key: str, target: str
) -> None:
    async with browser(base_url) as web:
        form = await web.get("/login", params={"next": target})
        assert form.status_code == 200, form.text
        fields = {
            "api_key": api_key,
            "login_token": hidden_field(form.text, "login_token"),
            "next": target,
        }
        answer = await web.post("/login", data=fields)
        assert answer.status_code == 303, answer.text
        location = answer.headers["location"]
        assert location.isascii() and location.startswith("/"), location
        assert httpx.URL(lands_on(answer)).path == httpx.URL(f"http://x{target}").path


async def test_an_export_of_a_dataset_with_a_non_latin1_name_downloads(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    dataset = await create_dataset(client, name="返金 flows ✓")
    answer = await web.get(f"/datasets/{dataset['id']}/export")
    assert answer.status_code == 200, answer.text
    disposition = answer.headers["content-disposition"]
    assert disposition.isascii(), disposition
    assert 'filename="' in disposition, disposition
    assert "filename*=UTF-8''%E8%BF%94%E9%87%91" in disposition, disposition


async def test_a_non_ascii_idempotency_key_is_a_key_like_any_other(
    client: httpx.AsyncClient,
) -> None:
    dataset = await create_dataset(client)
    case = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json={"input": "hi"})
    assert case.status_code == 201, case.text
    headers = {"idempotency-key": utf8("run-é-日本")}
    body = {"dataset_id": dataset["id"]}
    first = await client.post("/api/v1/eval-runs", json=body, headers=headers)
    again = await client.post("/api/v1/eval-runs", json=body, headers=headers)
    assert first.status_code == 201, first.text
    assert again.status_code == 201 and again.json()["run_id"] == first.json()["run_id"]
