"""Secrets at rest (agent headers): AES-256-GCM under the server's AGENTLASSO_SECRET_KEY."""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from agentlasso.config import Settings

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
# The first byte of every sealed value names its format and key, so keys can rotate later.
VERSION = b"\x01"

MISSING_KEY = (
    "AGENTLASSO_SECRET_KEY is not set: generate one with `agentlasso secret-key` "
    "and set it in the environment of the API and the workers."
)
MALFORMED_KEY = (
    "AGENTLASSO_SECRET_KEY is not a valid key (it must be 32 random bytes in base64): "
    "generate one with `agentlasso secret-key` "
    "and set it in the environment of the API and the workers."
)


class SecretKeyError(Exception):
    """The server's secret key is missing or malformed: a start-up error, not a request's."""


class UnsealError(Exception):
    """A sealed value cannot be opened: another key, another owner, or tampered bytes."""


def generate_key() -> str:
    """A new random key, as AGENTLASSO_SECRET_KEY holds it."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode()


def parse_key(text: str) -> bytes:
    """The key's bytes; SecretKeyError unless it is exactly 32 bytes of base64."""
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise SecretKeyError(MALFORMED_KEY) from None
    if len(key) != KEY_BYTES:
        raise SecretKeyError(MALFORMED_KEY)
    return key


def require_secret_key(settings: Settings) -> bytes:
    """The configured key, checked at start-up by the API and the workers alike."""
    if not settings.secret_key:
        raise SecretKeyError(MISSING_KEY)
    return parse_key(settings.secret_key)


def seal(key: bytes, plaintext: bytes, owner: bytes) -> bytes:
    """Encrypt and authenticate; `owner` (e.g. the agent id) binds the value to its row."""
    nonce = os.urandom(NONCE_BYTES)
    return VERSION + nonce + AESGCM(key).encrypt(nonce, plaintext, VERSION + owner)


def unseal(key: bytes, sealed: bytes, owner: bytes) -> bytes:
    """The plaintext of `seal(key, plaintext, owner)`; UnsealError for anything else."""
    if sealed[:1] != VERSION or len(sealed) < 1 + NONCE_BYTES + TAG_BYTES:
        raise UnsealError("not a sealed value of a known version")
    nonce, ciphertext = sealed[1 : 1 + NONCE_BYTES], sealed[1 + NONCE_BYTES :]
    try:
        return AESGCM(key).decrypt(nonce, ciphertext, VERSION + owner)
    except InvalidTag:
        raise UnsealError("the value was sealed with another key or for another owner") from None
