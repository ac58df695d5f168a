"""OpenID Connect's relying-party side: discovery, the authorization URL, the code exchange and
the ID token's checks (signature by the provider's JWKS, issuer, audience, expiry, nonce).

joserfc does the cryptography and the claim checks; this module only says which. Tokens never
leave it in an error's text: a refusal names its reason alone.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any, cast
from urllib.parse import urlencode

import httpx
import msgspec
from joserfc import jwt
from joserfc.errors import ExpiredTokenError, JoseError
from joserfc.jwk import KeySet

# Discovery and keys are read again after this long (a provider rotates its keys rarely).
DISCOVERY_TTL_S = 3600.0
HTTP_TIMEOUT_S = 10.0
# Asymmetric algorithms only: a symmetric one would take the client secret as the key.
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"]
CLOCK_LEEWAY_S = 30


class OidcRefused(Exception):
    """The provider's answer is not one to sign in with; `reason` says why, in a word."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Provider(msgspec.Struct, frozen=True):
    """What discovery says about the provider, and its signing keys."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks: dict[str, Any]


_cache: dict[str, tuple[float, Provider]] = {}


async def provider(issuer: str) -> Provider:
    """The provider at `issuer`, from its discovery document (cached for DISCOVERY_TTL_S)."""
    cached = _cache.get(issuer)
    if cached is not None and time.monotonic() - cached[0] < DISCOVERY_TTL_S:
        return cached[1]
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as client:
            document = (await client.get(url)).raise_for_status().json()
            if document.get("issuer") != issuer:
                raise OidcRefused("discovery_issuer_mismatch")
            jwks = (await client.get(document["jwks_uri"])).raise_for_status().json()
        found = Provider(
            issuer=issuer,
            authorization_endpoint=str(document["authorization_endpoint"]),
            token_endpoint=str(document["token_endpoint"]),
            jwks=jwks,
        )
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise OidcRefused("provider_unreachable") from exc
    _cache[issuer] = (time.monotonic(), found)
    return found


def forget_provider(issuer: str) -> None:
    """Read the provider's discovery and keys afresh next time (after an unknown key id)."""
    _cache.pop(issuer, None)


def new_verifier() -> tuple[str, str]:
    """A PKCE code verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_url(
    found: Provider, client_id: str, redirect_uri: str, state: str, nonce: str, challenge: str
) -> str:
    """Where the browser goes to sign in at the provider."""
    query = urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
        "scope": "openid email profile", "state": state, "nonce": nonce,
        "code_challenge": challenge, "code_challenge_method": "S256",
    })  # fmt: skip
    return f"{found.authorization_endpoint}?{query}"


async def exchange_code(
    found: Provider, client_id: str, secret: str, redirect_uri: str, code: str, verifier: str
) -> str:
    """The ID token the provider gives for this code (client_secret_basic)."""
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
            "code_verifier": verifier}  # fmt: skip
    try:
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as client:
            answer = await client.post(found.token_endpoint, data=form, auth=(client_id, secret))
        if answer.status_code != 200:
            raise OidcRefused("code_refused")
        id_token = answer.json().get("id_token")
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        raise OidcRefused("provider_unreachable") from exc
    if not isinstance(id_token, str):
        raise OidcRefused("no_id_token")
    return id_token


def verified_claims(found: Provider, client_id: str, id_token: str, nonce: str) -> dict[str, Any]:
    """The ID token's claims once its signature, issuer, audience, expiry and nonce hold."""
    try:
        keys = KeySet.import_key_set(cast(Any, found.jwks))  # a JWKS, as served
        token = jwt.decode(id_token, keys, algorithms=ALGORITHMS)
    except JoseError as exc:
        raise OidcRefused("bad_signature") from exc
    except (ValueError, TypeError) as exc:
        raise OidcRefused("malformed_token") from exc
    registry = jwt.JWTClaimsRegistry(
        leeway=CLOCK_LEEWAY_S,
        iss={"essential": True, "value": found.issuer},
        aud={"essential": True, "value": client_id},
        sub={"essential": True},
        exp={"essential": True},
        nonce={"essential": True, "value": nonce},
    )
    claims = dict(token.claims)
    try:
        registry.validate(claims)
    except ExpiredTokenError as exc:
        raise OidcRefused("expired_token") from exc
    except JoseError as exc:
        raise OidcRefused(_claim_reason(exc)) from exc
    return claims


def _claim_reason(exc: JoseError) -> str:
    """Which claim failed, in a word."""
    claim = str(getattr(exc, "claim", "") or "")
    return {"iss": "wrong_issuer", "aud": "wrong_audience", "nonce": "wrong_nonce"}.get(
        claim, "bad_claims"
    )
