"""`agentlasso worker`: run one arq worker process."""

from __future__ import annotations

from typing import Any, cast

from arq.worker import run_worker as run_arq_worker

from workers.settings import WorkerSettings


def run_worker(concurrency: int) -> int:
    """Run a worker until it is told to stop (SIGINT or SIGTERM)."""
    run_arq_worker(cast(Any, WorkerSettings), ctx={"concurrency": concurrency})
    return 0
