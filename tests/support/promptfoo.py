"""promptfoo itself (npm), to hold the promptfoo files the import tests read to what promptfoo
accepts. Installed once into a cache outside the repository, with the Node 24 of the dev extra
(tests/support/npm_packages.py).

`python -m tests.support.promptfoo` installs it (CI does, before the tests: .ci/run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support import npm_packages
from tests.support.npm_packages import NpmInstallFailed, node_path, npm_install

VERSION = "0.123.1"
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
    return npm_packages.cache_dir("promptfoo", VERSION)


def executable() -> Path:
    return cache_dir() / "node_modules" / ".bin" / "promptfoo"


def environment() -> dict[str, str]:
    """promptfoo's environment: our Node first on PATH, quiet, its state in the cache."""
    state = cache_dir() / "state"
    return {**os.environ, **_QUIET, "PATH": node_path(), "PROMPTFOO_CONFIG_DIR": str(state)}


def install() -> Path:
    """promptfoo's executable, installed first if it is not there yet."""
    if not executable().is_file():
        try:
            # Not promptfoo's own environment: its proxy to nowhere would stop npm too.
            npm_install("promptfoo", VERSION, {**os.environ, "PATH": node_path()})
        except NpmInstallFailed as exc:
            raise PromptfooMissing(str(exc)) from exc
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
