"""The Litestar application: routes, auth, errors, and the long-lived clients."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar, Router
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from redis.asyncio import Redis

from app.api.auth import provide_project_id, require_api_key
from app.api.datasets import DatasetController
from app.api.health import health, ready
from app.api.problems import EXCEPTION_HANDLERS
from app.api.runs import RunController, RunResultsController
from app.api.test_cases import DatasetTestCaseController, TestCaseController
from app.config import Settings, load_settings
from app.db.pool import create_pool


def _lifespan(settings: Settings):  # type: ignore[no-untyped-def]
    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.pool = await create_pool(
            settings.database_url, min_size=settings.db_pool_min, max_size=settings.db_pool_max
        )
        app.state.redis = Redis.from_url(settings.redis_url)
        try:
            yield
        finally:
            await app.state.redis.aclose()
            await app.state.pool.close()

    return lifespan


def api_router() -> Router:
    """Everything under /api/v1: authenticated, scoped to the caller's project."""
    return Router(
        path="/api/v1",
        route_handlers=[
            DatasetController,
            DatasetTestCaseController,
            TestCaseController,
            RunController,
            RunResultsController,
        ],
        guards=[require_api_key],
        dependencies={"project_id": Provide(provide_project_id)},
    )


def create_app(settings: Settings | None = None) -> Litestar:
    """The application, configured from the environment unless settings are given."""
    settings = settings or load_settings()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return Litestar(
        route_handlers=[health, ready, api_router()],
        lifespan=[_lifespan(settings)],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(title="AgentLasso", version="0.1.0", path="/schema"),
        debug=False,
    )
