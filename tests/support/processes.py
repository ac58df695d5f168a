"""The platform's own processes as tests and benchmarks run them: `agentlasso api` and workers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
# A fixed key for these processes (agent headers are encrypted with it): 32 bytes, base64.
SECRET_KEY = "YmVuY2htYXJrLWtleS1mb3ItYWdlbnRsYXNzby0zMmI="


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def agentlasso(*args: str) -> list[str]:
    """The argv that runs an `agentlasso` command with this interpreter."""
    return [sys.executable, "-m", "agentlasso.cli", *args]


async def agentlasso_awaited(
    base_url: str, key: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`agentlasso <args>` against a server as a CI job runs it, awaited without blocking the
    event loop (an in-process API serves from it); `env` adds to (or, with "", removes from)
    the process's environment."""
    full = {**os.environ, "AGENTLASSO_URL": base_url, "AGENTLASSO_API_KEY": key}
    full.pop("GITHUB_STEP_SUMMARY", None)
    full |= env or {}
    full = {name: value for name, value in full.items() if value != ""}
    process = await asyncio.create_subprocess_exec(
        *agentlasso(*args), cwd=ROOT, env=full,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return subprocess.CompletedProcess(args, process.returncode, out.decode(), err.decode())


def run_id_printed(stdout: str) -> str:
    """The run id from a gate command's first line, `Run <id>: ...`."""
    first = stdout.splitlines()[0]
    assert first.startswith("Run "), stdout
    return first.split()[1].rstrip(":")


@contextlib.contextmanager
def api_process(
    database_url: str,
    redis_url: str,
    extra_env: dict[str, str] | None = None,
    *,
    loopback_only: bool = False,
) -> Iterator[tuple[str, int]]:
    """`agentlasso api` as a child process; yields its base URL and pid. With loopback_only
    the process can reach no other address (tests/support/guarded_api.py)."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "AGENTLASSO_SECRET_KEY": SECRET_KEY,
        # Every test signs in from 127.0.0.1: one address for all of a run's open pages.
        "AGENTLASSO_OPEN_PAGE_RATE_LIMIT_PER_S": "1000",
        "AGENTLASSO_OPEN_PAGE_RATE_LIMIT_BURST": "100000",
        **(extra_env or {}),
    }
    argv = agentlasso("api", "--port", str(port), "--log-level", "warning")
    if loopback_only:
        argv = [sys.executable, "-m", "tests.support.guarded_api", *argv[4:]]
    process = subprocess.Popen(argv, cwd=ROOT, env=env)
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
    """Until GET /ready answers 200; fails at once if the process exits first."""

    def ready() -> bool:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the API process exited with {process.returncode} before ready")
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{base_url}/ready", timeout=2).status_code == 200
        return False

    wait_until(ready, timeout_s, what=f"{base_url} answering /ready")


class WorkerProcesses:
    """`agentlasso worker` processes on one database and queue; stop_all ends every one."""

    def __init__(
        self, database_url: str, redis_url: str, queue_name: str, secret_key: str = SECRET_KEY
    ) -> None:
        self.database_url = database_url
        self.redis_url = redis_url
        self.queue_name = queue_name
        self.secret_key = secret_key
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        concurrency: int = 100,
        redis_url: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "REDIS_URL": redis_url or self.redis_url,
            "AGENTLASSO_QUEUE": self.queue_name,
            "AGENTLASSO_SECRET_KEY": self.secret_key,
            "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            # Dead workers are found after 3 s here, so a crash test does not wait 20 s.
            "AGENTLASSO_CHUNK_STALE_S": "3",
            **(extra_env or {}),
        }
        argv = agentlasso("worker", "--concurrency", str(concurrency))
        process = subprocess.Popen(argv, cwd=ROOT, env=env)
        self.processes.append(process)
        return process

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
