"""The password policy and Argon2id hashing: what a person is told, and what matches."""

from __future__ import annotations

import pytest

from agentlasso.errors import InvalidInput
from agentlasso.services.passwords import (
    check_new_password,
    hash_password,
    password_problem,
    verify_password,
)

EMAIL = "ana@example.com"


@pytest.mark.parametrize(
    ("password", "problem"),
    [
        ("short one", "at least 12 characters"),
        ("x" * 257, "at most 256 characters"),
        (" " * 12, "only spaces"),
        ("ANA@example.com", "other than your email"),
        ("correct horse battery", None),
        ("x" * 256, None),
        ("élan vital über alles", None),
    ],
)
def test_the_policy_says_what_is_wrong(password: str, problem: str | None) -> None:
    said = password_problem(password, EMAIL)
    assert (said is None) if problem is None else (said is not None and problem in said)


def test_a_refused_password_names_its_field() -> None:
    with pytest.raises(InvalidInput) as refused:
        check_new_password("short", EMAIL)
    assert [error.pointer for error in refused.value.errors] == ["/password"]


async def test_an_argon2id_hash_matches_its_password_only() -> None:
    stored = await hash_password("correct horse battery")
    assert stored.startswith("$argon2id$")
    assert await verify_password(stored, "correct horse battery")
    assert not await verify_password(stored, "correct horse battery!")
    assert not await verify_password(None, "correct horse battery")
    assert not await verify_password("not a hash", "correct horse battery")
