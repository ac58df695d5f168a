"""Processes for end-to-end tests: the API as `agentlasso api`, and a fake agent."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Settings
from tests.fake_agent import FakeAgentServer, running_fake_agent

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_agent() -> Iterator[FakeAgentServer]:
    """A fake agent on 127.0.0.1."""
    with running_fake_agent() as server:
        yield server


class WorkerProcesses:
    """`agentlasso worker` processes on the test database and the test run's queue."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        concurrency: int = 100,
        redis_url: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "DATABASE_URL": self.settings.database_url,
            "REDIS_URL": redis_url or self.settings.redis_url,
            "AGENTLASSO_QUEUE": self.settings.queue_name,
            "AGENTLASSO_SECRET_KEY": self.settings.secret_key or "",
            "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            # Dead workers are found after 3 s here, so the crash test does not wait 20 s.
            "AGENTLASSO_CHUNK_STALE_S": "3",
            **(extra_env or {}),
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker", "--concurrency", str(concurrency)],
            cwd=ROOT,
            env=env,
        )
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


@pytest.fixture
def workers(settings: Settings) -> Iterator[WorkerProcesses]:
    """Start worker processes with `workers.start()`; all are stopped after the test."""
    pool = WorkerProcesses(settings)
    try:
        yield pool
    finally:
        pool.stop_all()
