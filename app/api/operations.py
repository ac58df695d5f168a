"""What operators read: /metrics for Prometheus, and /api/v1/workers."""

from __future__ import annotations

from datetime import datetime

import msgspec
from litestar import Controller, Response, get

from app.api.auth import PlatformDep, ProjectId
from app.observability import metrics
from app.services import operations as service


@get("/metrics", operation_id="metrics", tags=["operations"], include_in_schema=False)
async def prometheus_metrics(platform: PlatformDep) -> Response[bytes]:
    """Every metric of this API process, and the platform's gauges, in Prometheus' format."""
    settings = platform.settings
    try:
        await service.refresh_platform_gauges(platform.pool, platform.queue, settings.queue_name)
    except Exception:  # a gauge that cannot be read keeps its last value; the scrape goes on
        metrics.SCRAPE_REFRESH_FAILURES.inc()
    return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)


class Worker(msgspec.Struct, kw_only=True):
    """A live worker process."""

    id: str
    host: str
    pid: int
    started_at: datetime
    last_heartbeat_at: datetime
    # Chunks of the caller's project's runs it is working on; other projects' are not shown.
    chunks_held: int


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
        """Live workers, each with how many of this project's chunks it holds."""
        rows = await service.live_workers(platform.pool, project_id)
        return WorkerList(items=[Worker(**msgspec.structs.asdict(row)) for row in rows])
