"""AGENTLASSO_PUBLIC_URL: what is taken (and how it is written back), and what is refused."""

from __future__ import annotations

import pytest

from agentlasso.client import case_card_url
from agentlasso.config import parse_public_url

NAME = "AGENTLASSO_PUBLIC_URL"


@pytest.mark.parametrize(
    ("raw", "taken"),
    [
        ("https://lasso.example.com", "https://lasso.example.com"),
        ("https://lasso.example.com/", "https://lasso.example.com"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("https://example.com/lasso/", "https://example.com/lasso"),
        ("https://example.com/a/lasso//", "https://example.com/a/lasso"),
        ("  HTTPS://lasso.example.com  ", "https://lasso.example.com"),
        ("http://[::1]:8000/", "http://[::1]:8000"),
    ],
)
def test_an_http_origin_with_an_optional_prefix_is_taken_without_its_trailing_slash(
    raw: str, taken: str
) -> None:
    assert parse_public_url(NAME, raw) == taken


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("lasso.example.com", "must be an http or https address"),
        ("ftp://lasso.example.com", "must be an http or https address"),
        ("https://", "must be an http or https address"),
        ("https://lasso.example.com:99999", "must be an http or https address"),
        ("https://lasso.example.com/?team=a", "must be an address without a query or fragment"),
        ("https://lasso.example.com?", "must be an address without a query or fragment"),
        ("https://lasso.example.com/#runs", "must be an address without a query or fragment"),
        ("https://lasso.example.com/my lasso", "must be an address without spaces"),
        ("https://ci@lasso.example.com", "must not carry a user name or password"),
    ],
)
def test_anything_else_is_refused_naming_the_setting(raw: str, said: str) -> None:
    with pytest.raises(SystemExit) as refused:
        parse_public_url(NAME, raw)
    assert str(refused.value).startswith(f"{NAME} {said}")


def test_a_password_in_the_address_is_not_repeated() -> None:
    with pytest.raises(SystemExit) as refused:
        parse_public_url(NAME, "https://ci:hunter2@lasso.example.com")
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize(
    ("trial", "card"),
    [
        (1, "https://lasso.example.com/runs/r1/cases/c1"),
        (3, "https://lasso.example.com/runs/r1/cases/c1?trial=3"),
    ],
)
def test_a_case_card_is_under_its_run_page_naming_the_trial_after_the_first(
    trial: int, card: str
) -> None:
    assert case_card_url("https://lasso.example.com/runs/r1", "c1", trial) == card
