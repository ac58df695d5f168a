"""What the benchmarks share: a fresh database, the API as a real process, its memory."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx

from app.db.migrations import apply_migrations
from app.services.api_keys import create_key_for_project_name

ROOT = Path(__file__).resolve().parents[2]
# A fixed key for benchmark processes (agent headers are encrypted with it).
SECRET_KEY = "YmVuY2htYXJrLWtleS1mb3ItYWdlbnRsYXNzby0zMmI="


@contextlib.contextmanager
def server_urls() -> Iterator[tuple[str, str]]:
    """DATABASE_URL / REDIS_URL when set, else embedded servers for the benchmark."""
    database_url, redis_url = os.environ.get("DATABASE_URL"), os.environ.get("REDIS_URL")
    if database_url and redis_url:
        yield database_url, redis_url
        return
    from app.devstack.services import remove_embedded_data, start_embedded_services

    data_dir = Path(tempfile.mkdtemp(prefix="agentlasso-bench-"))
    try:
        with start_embedded_services(
            data_dir, database_url=database_url, redis_url=redis_url
        ) as services:
            yield services.database_url, services.redis_url
    finally:
        remove_embedded_data(data_dir)


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


async def fresh_database(server_url: str) -> str:
    """A new, migrated database for one benchmark run."""
    name = f"agentlasso_bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = with_database(server_url, name)
    await apply_migrations(url)
    return url


async def drop_database(server_url: str, database_url: str) -> None:
    admin = await asyncpg.connect(server_url)
    try:
        name = urlsplit(database_url).path.lstrip("/")
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def api_process(
    database_url: str, redis_url: str, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[str, int]]:
    """`agentlasso api` as a child process; yields its base URL and pid."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "AGENTLASSO_SECRET_KEY": SECRET_KEY,
        **(extra_env or {}),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "api", "--port", str(port), "--log-level", "warning"],
        cwd=ROOT,
        env=env,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base_url, process)
        yield base_url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def wait_ready(
    base_url: str, process: subprocess.Popen[bytes] | None = None, timeout_s: float = 30
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the API process exited with {process.returncode} before ready")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base_url}/ready", timeout=2).status_code == 200:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{base_url} was not ready within {timeout_s} s")


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory (VmRSS) or its peak so far (VmHWM) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for pid {pid}")


def run_against_api(benchmark: Callable[[str, int, str, int], None], default_cases: int) -> None:
    """Parse `--cases`, start a fresh database and `agentlasso api`, run the benchmark on them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=default_cases)
    cases = parser.parse_args().cases
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url))
        try:
            with api_process(database_url, redis_url) as (base_url, pid):
                benchmark(base_url, pid, new_key(database_url), cases)
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


def new_key(database_url: str) -> str:
    return asyncio.run(create_key_for_project_name(database_url, f"bench-{uuid.uuid4().hex[:8]}"))
