"""An identity provider whose ID tokens the test writes itself, signed with joserfc against the
JWKS it serves on 127.0.0.1: for the refusals a real provider never gives (a tampered token, a
wrong nonce or audience, an expired token). The happy path goes through the real oidc-provider
(tests/support/oidc_provider.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

CLIENT_ID = "agentlasso-fake-idp-client"
CLIENT_SECRET = "fake-idp-secret-for-tests-only"


@dataclass
class FakeIdp:
    """The provider's state: its key, and the ID token its token endpoint gives next."""

    issuer: str = ""
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "k1"}))
    id_token: str = ""
    token_requests: list[dict[str, str]] = field(default_factory=list)

    def claims(self, nonce: str, **overrides: Any) -> dict[str, Any]:
        """A valid ID token's claims for this nonce, with `overrides` (None removes a claim)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer, "aud": CLIENT_ID, "sub": "fake-subject", "nonce": nonce,
            "iat": now, "exp": now + 300, "email": "dana@allowed.example",
            "email_verified": True,
        }  # fmt: skip
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def sign(self, claims: dict[str, Any], key: RSAKey | None = None) -> str:
        """The claims as a JWT signed by `key` (this provider's own by default)."""
        signer = key or self.key
        return jwt.encode({"alg": "RS256", "kid": signer.kid}, claims, signer)

    def document(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/auth",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
        }

    def jwks(self) -> dict[str, Any]:
        return KeySet([self.key]).as_dict(private=False)


def _handler(idp: FakeIdp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/.well-known/openid-configuration":
                self._json(idp.document())
            elif self.path == "/jwks":
                self._json(idp.jwks())
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            form = dict(
                pair.split("=", 1) for pair in self.rfile.read(length).decode().split("&") if pair
            )
            form["authorization"] = self.headers.get("authorization") or ""
            idp.token_requests.append(form)
            self._json({"id_token": idp.id_token, "token_type": "Bearer"})

        def _json(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@contextmanager
def running_fake_idp() -> Iterator[FakeIdp]:
    """The fake provider, serving on a free loopback port until the block ends."""
    idp = FakeIdp()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(idp))
    idp.issuer = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield idp
    finally:
        server.shutdown()
        server.server_close()
