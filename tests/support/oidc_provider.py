"""A real OpenID Provider for the SSO tests: npm `oidc-provider` (panva's certified
implementation), installed once into a cache outside the repository and run with the dev
extra's Node 24 (tests/support/promptfoo.py's), on 127.0.0.1.

`python -m tests.support.oidc_provider` installs it (CI does, before the tests: .ci/run).
tests/support/oidc_provider.mjs configures it: one confidential client with PKCE required, and
three accounts (below).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.promptfoo import node_bin
from tests.support.servers import free_socket

VERSION = "9.13.3"
INSTALL_TIMEOUT_S = 600
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
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "agentlasso-tests" / f"oidc-provider-{VERSION}"


def install() -> Path:
    """The folder whose node_modules holds oidc-provider, installed first if missing."""
    target = cache_dir()
    if (target / "node_modules" / "oidc-provider" / "package.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Installed beside its place and moved in whole, so a broken install is never taken for one.
    staging = Path(tempfile.mkdtemp(prefix="oidc-provider-", dir=target.parent))
    npm = node_bin().parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    command = [str(node_bin() / "node"), str(npm), "install", "--prefix", str(staging),
               "--no-audit", "--no-fund", f"oidc-provider@{VERSION}"]  # fmt: skip
    path = f"{node_bin()}{os.pathsep}{os.environ.get('PATH', '')}"
    try:
        done = subprocess.run(
            command, env={**os.environ, "PATH": path}, capture_output=True, text=True,
            timeout=INSTALL_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise OidcProviderMissing(f"npm install oidc-provider@{VERSION}: {exc}") from exc
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise OidcProviderMissing(f"npm install oidc-provider failed:\n{done.stderr[-2000:]}")
    staging.rename(target)
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
