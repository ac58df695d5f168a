"""A real OpenID Provider for the SSO tests: npm `oidc-provider` (panva's certified
implementation), installed once into a cache outside the repository and run with the dev
extra's Node 24 (tests/support/npm_packages.py), on 127.0.0.1.

`python -m tests.support.oidc_provider` installs it (CI does, before the tests: .ci/run).
tests/support/oidc_provider.mjs configures it: one confidential client with PKCE required, and
three accounts (below).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support import npm_packages
from tests.support.npm_packages import NpmInstallFailed, node_bin, node_path, npm_install
from tests.support.servers import free_socket

VERSION = "9.13.3"
SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
CLIENT_ID = "agentlasso-tests"
CLIENT_SECRET = "a-client-secret-for-tests-only-0123456789"
ALLOWED_DOMAIN = "allowed.example"
# The provider's accounts, by the id typed at its dev login page.
VERIFIED = "alice"  # alice@allowed.example, verified
UNVERIFIED = "carol"  # carol@allowed.example, not verified
OTHER_DOMAIN = "bob"  # bob@elsewhere.example, verified


class OidcProviderMissing(Exception):
    """oidc-provider could not be installed here."""


def cache_dir() -> Path:
    return npm_packages.cache_dir("oidc-provider", VERSION)


def install() -> Path:
    """The folder whose node_modules holds oidc-provider, installed first if missing."""
    target = cache_dir()
    if not (target / "node_modules" / "oidc-provider" / "package.json").is_file():
        try:
            npm_install("oidc-provider", VERSION, {**os.environ, "PATH": node_path()})
        except NpmInstallFailed as exc:
            raise OidcProviderMissing(str(exc)) from exc
    return target


@contextmanager
def running_provider(redirect_uri: str) -> Iterator[str]:
    """oidc-provider on a free loopback port, its one client sending people to `redirect_uri`;
    yields its issuer URL."""
    with free_socket() as held:
        port = held.getsockname()[1]
    issuer = f"http://127.0.0.1:{port}"
    env = {**os.environ, "NODE_PATH": str(install() / "node_modules"), "NODE_ENV": "test"}
    command = [str(node_bin() / "node"), str(SCRIPT), str(port), CLIENT_ID, CLIENT_SECRET,
               redirect_uri]  # fmt: skip
    process = subprocess.Popen(
        command, env=env, cwd=install(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        _wait_until_up(issuer, process)
        yield issuer
    finally:
        process.terminate()
        process.wait(timeout=10)


def _wait_until_up(issuer: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = process.stdout.read().decode() if process.stdout else ""
            raise OidcProviderMissing(f"oidc-provider exited: {said[-2000:]}")
        try:
            httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise OidcProviderMissing("oidc-provider did not answer within 30 s")


if __name__ == "__main__":
    try:
        print(install())
    except OidcProviderMissing as exc:
        sys.exit(str(exc))
