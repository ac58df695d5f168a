"""`agentlasso worker`: run one arq worker process."""

from __future__ import annotations

from agentlasso import queue
from agentlasso_workers.settings import WorkerSettings


def run_worker(concurrency: int, metrics_port: int | None = None) -> int:
    """Run a worker until it is told to stop (SIGINT or SIGTERM)."""
    queue.run_worker(WorkerSettings, ctx={"concurrency": concurrency, "metrics_port": metrics_port})
    return 0
