"""The distribution as a user gets it: a wheel built from a clean clone, installed in a new venv.

A clone of HEAD holds only what is committed, so a file left untracked or out of the packaging
rules cannot make the wheel look complete.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

from tests.support.source import ROOT

BUILD_TIMEOUT_S = 300.0  # pip fetches setuptools into its build environment
INSTALL_TIMEOUT_S = 600.0  # every dependency, from pip's cache on later runs
# What would let the checkout in: an interpreter run from a temp cwd with none of these set
# sees only what the venv installed.
CHECKOUT_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")


def run_checked(
    argv: list[str], timeout_s: float, cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    """Run a command that must succeed; its output (a failure shows it all)."""
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


def build_wheel_from_clone(workdir: Path) -> Path:
    """Clone HEAD of this repository into `workdir` and `pip wheel --no-deps` it; the wheel."""
    clone, out = workdir / "clone", workdir / "wheels"
    run_checked(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(clone)], 120)
    # HEAD itself, which may be on no branch (a detached checkout, a worktree).
    run_checked(["git", "-C", str(clone), "fetch", "--quiet", "origin", "HEAD"], 120)
    run_checked(["git", "-C", str(clone), "checkout", "--quiet", "--detach", "FETCH_HEAD"], 60)
    pip = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out)]
    run_checked([*pip, str(clone)], BUILD_TIMEOUT_S)
    (wheel,) = out.glob("agentlasso-*.whl")
    return wheel


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without what would put the checkout or another venv on sys.path."""
    env = {name: value for name, value in os.environ.items() if name not in CHECKOUT_VARIABLES}
    return {**env, **extra}


class FreshVenv:
    """A new venv (no system site-packages, nothing of the checkout) to install the wheel in."""

    def __init__(self, path: Path) -> None:
        venv.create(path, with_pip=True, clear=True)
        self.path = path
        self.bin = path / "bin"
        self.python = self.bin / "python"

    def install(self, *requirements: str) -> None:
        """`pip install` into the venv, run from its own folder (pip's cache is reused)."""
        pip = [str(self.python), "-m", "pip", "install", "--quiet", *requirements]
        run_checked(pip, INSTALL_TIMEOUT_S, cwd=self.path, env=clean_env())

    def command(self, name: str) -> str:
        """A console script the venv installed."""
        return str(self.bin / name)
