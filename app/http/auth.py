"""Project API keys on every /api/v1 request."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.di import NamedDependency
from litestar.handlers import BaseRouteHandler

from agentlasso.domain.audit import Caller
from agentlasso.http.permissions import require_scope
from agentlasso.services.api_keys import admit, key_actor
from agentlasso.services.platform import Platform

# A handler parameter of this type receives the caller's project id.
ProjectId = NamedDependency[UUID]
# A handler parameter of this type (named `caller`) receives who is calling, for the audit log.
CallerDep = NamedDependency[Caller]
# A handler parameter of this type (named `platform`) receives the process's Platform.
PlatformDep = NamedDependency[Platform]


def presented_key(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    """The key from `x-api-key`, or from `Authorization: Bearer`."""
    key = connection.headers.get("x-api-key")
    if key:
        return key.strip()
    scheme, _, token = (connection.headers.get("authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def require_api_key(
    connection: ASGIConnection[Any, Any, Any, Any], _handler: BaseRouteHandler
) -> None:
    """Guard: authenticate the caller, hold its key to the scope the route needs
    (app/http/permissions.py), and remember its project for the handler."""
    platform = platform_of(connection)
    presented = presented_key(connection)
    key = await admit(platform, presented)
    require_scope(key.scope, method_of(connection), connection.scope["path_template"])
    connection.state.project_id = key.project_id
    assert presented is not None
    connection.state.caller = Caller(
        actor=key_actor(key.key_id, presented), ip=client_ip(connection)
    )


def method_of(connection: ASGIConnection[Any, Any, Any, Any]) -> str:
    """The request's method (a websocket has none: it reads, as a GET does)."""
    return str(connection.scope.get("method", "GET"))


def client_ip(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    """The address the request came from, as the server saw it (a proxy's, behind one)."""
    return connection.client.host if connection.client else None


def provide_project_id(request: Request[Any, Any, Any]) -> UUID:
    """The caller's project, as the guard found it."""
    project_id: UUID = request.state.project_id
    return project_id


def provide_caller(request: Request[Any, Any, Any]) -> Caller:
    """Who is calling, as the guard found it."""
    caller: Caller = request.state.caller
    return caller


def platform_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Platform:
    """The process's Platform, as the lifespan opened it."""
    platform = connection.app.state.platform
    assert isinstance(platform, Platform)
    return platform


def provide_platform(request: Request[Any, Any, Any]) -> Platform:
    """Dependency: the process's Platform, for every handler that asks for `platform`."""
    return platform_of(request)
