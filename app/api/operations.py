"""What operators read: /metrics for Prometheus, and /api/v1/workers."""

from __future__ import annotations

import hashlib
from datetime import datetime

import msgspec
from litestar import Controller, Response, get

from agentlasso.db.workers import WorkerRow
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.observability import metrics
from agentlasso.services import operations as service


@get("/metrics", operation_id="metrics", tags=["operations"], include_in_schema=False)
async def prometheus_metrics(platform: PlatformDep) -> Response[bytes]:
    """Every metric of this API process, and the platform's gauges, in Prometheus' format."""
    settings = platform.settings
    try:
        await service.refresh_platform_gauges(platform.pool, platform.queue, settings.queue_name)
    except Exception:  # a gauge that cannot be read keeps its last value; the scrape goes on
        metrics.SCRAPE_REFRESH_FAILURES.inc()
    return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)


class Worker(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A live worker process; its host and pid only where the server is set to show them
    (AGENTLASSO_SHOW_WORKER_HOSTS=1), since every project's key may list workers."""

    # Opaque and stable for the worker's life: the process's own id names its host and pid.
    id: str
    started_at: datetime
    last_heartbeat_at: datetime
    # Chunks of the caller's project's runs it is working on; other projects' are not shown.
    chunks_held: int
    # Infrastructure, not a tenant's business: listed only with AGENTLASSO_SHOW_WORKER_HOSTS.
    host: str | msgspec.UnsetType = msgspec.UNSET
    pid: int | msgspec.UnsetType = msgspec.UNSET


class WorkerList(msgspec.Struct, kw_only=True):
    """The workers that beat within the last 20 seconds, oldest first."""

    items: list[Worker]
    # Always null: every live worker fits on one page.
    next_cursor: str | None = None


class WorkerController(Controller):
    """The worker processes serving every project."""

    path = "/workers"
    tags = ("operations",)

    @get(operation_id="listWorkers")
    async def list_workers(self, platform: PlatformDep, project_id: ProjectId) -> WorkerList:
        """Live workers, each with how many of this project's chunks it holds (and its host and
        pid when the server runs with AGENTLASSO_SHOW_WORKER_HOSTS=1)."""
        rows = await service.live_workers(platform.pool, project_id)
        shown = platform.settings.show_worker_hosts
        return WorkerList(items=[_worker(row, show_host=shown) for row in rows])


def _worker(row: WorkerRow, *, show_host: bool) -> Worker:
    """A worker as a project sees it."""
    return Worker(
        id=public_worker_id(row.id),
        started_at=row.started_at,
        last_heartbeat_at=row.last_heartbeat_at,
        chunks_held=row.chunks_held,
        host=row.host if show_host else msgspec.UNSET,
        pid=row.pid if show_host else msgspec.UNSET,
    )


def public_worker_id(worker_id: str) -> str:
    """The id a project sees for a worker: a digest of its own (`host:pid:random`) id."""
    return hashlib.sha256(worker_id.encode()).hexdigest()[:16]
