"""The Litestar application: routes, auth, errors, and the long-lived clients."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import FrameType
from typing import Any

from litestar import Litestar, Router
from litestar.di import Provide
from litestar.exceptions import HTTPException
from litestar.openapi import OpenAPIConfig

from agentlasso import queue
from agentlasso.agents import AgentClient
from agentlasso.api.agents import AgentController
from agentlasso.api.alerts import AlertController
from agentlasso.api.audit_log import AuditLogController
from agentlasso.api.case_drafts import CaseDraftController
from agentlasso.api.comparisons import ComparisonController, FlakyController
from agentlasso.api.dataset_versions import DatasetVersionController
from agentlasso.api.datasets import DatasetController
from agentlasso.api.health import health, ready
from agentlasso.api.judge_agreement import JudgeAgreementController
from agentlasso.api.judge_examples import JudgeExampleController
from agentlasso.api.judge_settings import JudgeSettingsController
from agentlasso.api.openapi import complete as complete_openapi
from agentlasso.api.operations import WorkerController, prometheus_metrics
from agentlasso.api.preview import PreviewController
from agentlasso.api.review_items import ReviewItemController
from agentlasso.api.run_results import PostedResultsController, RunResultsController
from agentlasso.api.runs import RunController
from agentlasso.api.test_cases import DatasetTestCaseController, TestCaseController
from agentlasso.api.trace_rules import TraceRuleController
from agentlasso.api.traces import TraceController, TraceSettingsController, otlp_router
from agentlasso.api.user_turns import UserTurnController
from agentlasso.config import Settings, load_settings
from agentlasso.coordination.rate_limits import TokenBucket
from agentlasso.coordination.run_watch import RunWatcher
from agentlasso.coordination.server_spend import ServerKeySpend
from agentlasso.db.pool import create_pool
from agentlasso.devstack.demo_agent import demo_agent
from agentlasso.http.allowed_methods import AllowEveryMethod
from agentlasso.http.auth import (
    provide_caller,
    provide_platform,
    provide_project_id,
    require_api_key,
)
from agentlasso.http.problems import EXCEPTION_HANDLERS
from agentlasso.http.request_metrics import CountRequests
from agentlasso.http.strict_bodies import read_bodies_strictly
from agentlasso.judge.preview import PreviewJudge
from agentlasso.observability.loop_lag import watch_loop_lag
from agentlasso.off_loop import leave_startup_out_of_collections
from agentlasso.secrets_box import require_secret_key
from agentlasso.services.platform import Platform
from agentlasso.services.request_limits import RequestLimits
from agentlasso.web.routes import http_error_anywhere, web_routers


def _lifespan(
    settings: Settings,
) -> Callable[[Litestar], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        platform = await open_platform(settings)
        app.state.platform = platform
        answer_waiters_on_stop_signals(platform.watcher)
        lag = asyncio.create_task(watch_loop_lag())
        try:
            yield
        finally:
            lag.cancel()
            await close_platform(platform)

    return lifespan


async def open_platform(settings: Settings) -> Platform:
    """Connect to PostgreSQL and Redis and start listening for run events."""
    secret_key = require_secret_key(settings)
    leave_startup_out_of_collections()
    pool = await create_pool(
        settings.database_url,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        acquire_timeout_s=settings.db_acquire_timeout_s,
    )
    watcher = RunWatcher(
        settings.database_url, pool, settings.max_waiters, settings.max_waiters_per_project
    )
    await watcher.start()
    agent_client = AgentClient.from_settings(settings, max_connections=20)
    redis = await queue.connect(settings.redis_url)
    return Platform(
        settings=settings,
        pool=pool,
        queue=redis,
        watcher=watcher,
        secret_key=secret_key,
        agent_client=agent_client,
        limits=RequestLimits(redis, settings),
        server_spend=ServerKeySpend.of(redis, settings),
        generation_limiter=TokenBucket(
            redis,
            f"{settings.queue_name}:generations",
            settings.quota_generations_per_min / 60,
            settings.quota_generations_per_min,
        ),
        preview_judge=PreviewJudge(settings, pool, redis, secret_key),
    )


async def close_platform(platform: Platform) -> None:
    """Close what open_platform opened."""
    await platform.agent_client.aclose()
    await platform.preview_judge.aclose()
    await platform.watcher.stop()
    await platform.queue.aclose()
    await platform.pool.close()


def answer_waiters_on_stop_signals(watcher: RunWatcher) -> None:
    """On SIGTERM or SIGINT, answer long-polls and end event streams before anything else.

    uvicorn waits for open requests before it runs the lifespan's shutdown, so waking waiters
    there would be too late: a long-poll would hold shutdown for its whole wait. Chaining onto
    uvicorn's own handlers wakes them first, then lets uvicorn shut down as usual.
    """
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(number)
        if not callable(previous):
            continue  # not under a server that handles the signal (tests, embedding)

        def chained(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
            loop.call_soon_threadsafe(watcher.shutdown)
            previous(signum, frame)

        signal.signal(number, chained)


def api_router() -> Router:
    """Everything under /api/v1: authenticated, scoped to the caller's project."""
    return Router(
        path="/api/v1",
        route_handlers=[
            AgentController,
            DatasetController,
            DatasetVersionController,
            DatasetTestCaseController,
            TestCaseController,
            RunController,
            PreviewController,
            RunResultsController,
            ComparisonController,
            FlakyController,
            PostedResultsController,
            JudgeSettingsController,
            CaseDraftController,
            TraceController,
            TraceSettingsController,
            TraceRuleController,
            AlertController,
            WorkerController,
            UserTurnController,
            AuditLogController,
            ReviewItemController,
            JudgeAgreementController,
            JudgeExampleController,
        ],
        guards=[require_api_key],
        before_request=read_bodies_strictly,
        dependencies={
            "project_id": Provide(provide_project_id, sync_to_thread=False),
            "caller": Provide(provide_caller, sync_to_thread=False),
        },
    )


def create_app(settings: Settings | None = None) -> Litestar:
    """The application, configured from the environment unless settings are given."""
    settings = settings or load_settings()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app = Litestar(
        route_handlers=[
            health,
            ready,
            prometheus_metrics,
            api_router(),
            otlp_router(),
            *web_routers(settings),
            *([demo_agent] if settings.demo_agent else []),
        ],
        lifespan=[_lifespan(settings)],
        dependencies={"platform": Provide(provide_platform, sync_to_thread=False)},
        middleware=[CountRequests, AllowEveryMethod],
        exception_handlers={
            **EXCEPTION_HANDLERS,  # type: ignore[dict-item]
            HTTPException: http_error_anywhere,
        },
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(title="AgentLasso", version="0.1.0", path="/schema"),
        debug=False,
        # Logging belongs to the process (app/observability/logs.py: configure_logging):
        # Litestar's default would replace the root logger's handlers with its own format.
        logging_config=None,
    )
    complete_openapi(app, priced_models=settings.judge_prices)
    return app
