"""Every route the application serves, as its router matches it, and who may knock."""

from __future__ import annotations

import re
import uuid
from typing import Literal

import msgspec
from litestar import Litestar
from litestar.routes import HTTPRoute

from agentlasso.config import Settings
from agentlasso.http.auth import require_api_key
from agentlasso.server import create_app
from agentlasso.web.sessions import require_session

Door = Literal["api_key", "session", "open"]
# Values that fill a path's parameters: ids that exist nowhere, so an allowed request changes
# nothing (it is answered 404 or 422, never 401 or 403).
_KNOWN_VALUES = {"action": "accept", "file_path": "app.css"}


class AppRoute(msgspec.Struct, frozen=True):
    """One method of one path, and what its guard asks for."""

    method: str
    path: str
    door: Door

    @property
    def key(self) -> str:
        """As app/http/permissions.py names it."""
        return f"{self.method} {self.path}"

    def example_path(self) -> str:
        """The path with each parameter filled in (an id nothing has)."""
        return re.sub(r"\{(\w+)\}", lambda m: _KNOWN_VALUES.get(m[1], str(uuid.uuid4())), self.path)


def app_routes(app: Litestar) -> list[AppRoute]:
    """Every (method, path) the app routes, OPTIONS left out (any live key or session may)."""
    found: set[AppRoute] = set()
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            guards = handler.resolve_guards()
            door: Door = "open"
            if require_api_key in guards:
                door = "api_key"
            elif require_session in guards:
                door = "session"
            for method in handler.http_methods - {"OPTIONS"}:
                found.add(AppRoute(method, route.path_format, door))
    return sorted(found, key=lambda each: (each.path, each.method))


def every_route() -> list[AppRoute]:
    """The routes of the app as `agentlasso api` serves it (no connection is made)."""
    settings = Settings(
        database_url="postgresql://nowhere/none",
        redis_url="redis://nowhere",
        secret_key="dGVzdC1rZXktZm9yLWFnZW50bGFzc28tMzItYnl0ZXM=",
    )
    return app_routes(create_app(settings))
