"""The documentation builds offline with `mkdocs build --strict`, and the README stays a front
door: small, with the two commands people (and .ci/run) copy from it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import ROOT

README_LIMIT_BYTES = 8 * 1024
# A script, stylesheet or image fetched from another origin: what an offline build must not hold.
REMOTE_ASSET = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""")
DEV_COMMAND = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]' && .venv/bin/agentlasso dev"
)


def ci_test_command() -> str:
    """The command .ci/run runs as the README's test command (its last line that runs pytest)."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return next(line for line in reversed(lines) if line.endswith("pytest"))


@pytest.fixture(scope="module")
def build(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`mkdocs build --strict` into a fresh folder: its outcome, and the site."""
    site = tmp_path_factory.mktemp("site")
    # Material prints a banner about its successor on every build; it is not a build warning.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    return done, site


def test_mkdocs_builds_strict_without_a_warning(
    build: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, site = build
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    warnings = [line for line in output.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    assert warnings == []
    assert (site / "index.html").is_file()


def test_the_built_site_loads_nothing_from_another_origin(
    build: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, site = build
    assert done.returncode == 0, done.stdout + done.stderr
    offenders = [
        str(page.relative_to(site))
        for page in site.rglob("*.html")
        if REMOTE_ASSET.search(page.read_text())
    ]
    assert offenders == []


def test_a_remote_asset_is_recognised() -> None:
    assert REMOTE_ASSET.search('<link rel="stylesheet" href="https://fonts.googleapis.com/css">')
    assert REMOTE_ASSET.search("<script src=//cdn.example.com/mermaid.js></script>")
    assert not REMOTE_ASSET.search('<a href="https://example.com">a link</a>')
    assert not REMOTE_ASSET.search('<script src="../assets/javascripts/bundle.js"></script>')


def test_the_readme_is_a_front_door() -> None:
    readme = ROOT / "README.md"
    assert readme.stat().st_size < README_LIMIT_BYTES
    text = readme.read_text()
    assert DEV_COMMAND in text
    assert ci_test_command() in text
