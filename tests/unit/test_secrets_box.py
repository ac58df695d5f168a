"""The box that keeps agent headers at rest: AES-256-GCM bound to its owner, keys checked."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable

import pytest

from agentlasso.config import Settings
from agentlasso.secrets_box import (
    MISSING_KEY,
    SecretKeyError,
    UnsealError,
    generate_key,
    parse_key,
    require_secret_key,
    seal,
    unseal,
)

KEY = parse_key(generate_key())
OWNER = uuid.uuid4().bytes
SECRET = b'{"authorization": "Bearer sk-live-123"}'


def test_a_sealed_value_opens_with_its_key_and_owner() -> None:
    sealed = seal(KEY, SECRET, OWNER)
    assert unseal(KEY, sealed, OWNER) == SECRET


def test_sealed_bytes_hold_no_plaintext_and_differ_every_time() -> None:
    first, second = seal(KEY, SECRET, OWNER), seal(KEY, SECRET, OWNER)
    assert b"sk-live-123" not in first
    assert first != second, "a fresh nonce for every value"
    assert first[:1] == second[:1] == b"\x01", "the version byte comes first"


def test_another_key_cannot_open_it() -> None:
    sealed = seal(KEY, SECRET, OWNER)
    with pytest.raises(UnsealError):
        unseal(parse_key(generate_key()), sealed, OWNER)


def test_a_value_moved_to_another_owner_cannot_be_opened() -> None:
    sealed = seal(KEY, SECRET, OWNER)
    with pytest.raises(UnsealError):
        unseal(KEY, sealed, uuid.uuid4().bytes)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda sealed: sealed[:-1] + bytes([sealed[-1] ^ 1]),  # the tag
        lambda sealed: sealed[:20] + bytes([sealed[20] ^ 1]) + sealed[21:],  # the ciphertext
        lambda sealed: sealed[:5] + bytes([sealed[5] ^ 1]) + sealed[6:],  # the nonce
        lambda sealed: b"\x02" + sealed[1:],  # an unknown version
        lambda sealed: sealed[:10],  # truncated
        lambda sealed: b"",
    ],
    ids=["tag", "ciphertext", "nonce", "version", "truncated", "empty"],
)
def test_tampered_bytes_cannot_be_opened(tamper: Callable[[bytes], bytes]) -> None:
    sealed = seal(KEY, SECRET, OWNER)
    with pytest.raises(UnsealError):
        unseal(KEY, tamper(sealed), OWNER)


def test_generated_keys_are_32_random_bytes() -> None:
    keys = {generate_key() for _ in range(10)}
    assert len(keys) == 10
    assert all(len(base64.b64decode(key)) == 32 for key in keys)


@pytest.mark.parametrize(
    "text",
    ["", "not base64!", base64.b64encode(b"x" * 16).decode(), base64.b64encode(b"x" * 33).decode()],
    ids=["empty", "not-base64", "too-short", "too-long"],
)
def test_malformed_keys_are_refused_with_the_remedy(text: str) -> None:
    with pytest.raises(SecretKeyError, match="agentlasso secret-key"):
        parse_key(text)


def test_the_settings_key_is_required() -> None:
    missing = Settings(database_url="postgresql://x", redis_url="redis://x")
    with pytest.raises(SecretKeyError) as raised:
        require_secret_key(missing)
    assert str(raised.value) == MISSING_KEY
    assert "AGENTLASSO_SECRET_KEY is not set" in MISSING_KEY
    key = generate_key()
    configured = Settings(database_url="postgresql://x", redis_url="redis://x", secret_key=key)
    assert require_secret_key(configured) == base64.b64decode(key)
