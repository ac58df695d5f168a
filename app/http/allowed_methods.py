"""`Allow` on OPTIONS lists every method of the path, not only the first handler's.

Litestar's automatic OPTIONS handler remembers the methods of its route as they were when the
first handler of a path was registered (litestar-org/litestar#4169), so a path served by
several handlers (GET and POST of /agents, say) answered `Allow: OPTIONS, POST`. Once the app
is built every route knows all its methods; this middleware puts them in the answer.
"""

from __future__ import annotations

from litestar import Litestar
from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.routes import HTTPRoute
from litestar.types import ASGIApp, Message, Receive, Scope, Send


class AllowEveryMethod:
    """ASGI middleware: an OPTIONS answer's `Allow` names every method its path serves."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._allowed: dict[str, str] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope.get("method") != "OPTIONS":
            await self.app(scope, receive, send)
            return
        methods = self._allowed_by_path(Litestar.from_scope(scope)).get(
            scope.get("path_template", "")
        )

        async def send_with_allow(message: Message) -> None:
            if message["type"] == "http.response.start" and methods is not None:
                headers = MutableScopeHeaders.from_message(message)
                if "allow" in headers:
                    headers["Allow"] = methods
            await send(message)

        await self.app(scope, receive, send_with_allow)

    def _allowed_by_path(self, app: Litestar) -> dict[str, str]:
        """Each path template of the app with its methods, as an `Allow` value."""
        if self._allowed is None:
            self._allowed = {
                route.path_format: ", ".join(sorted(route.methods))
                for route in app.routes
                if isinstance(route, HTTPRoute)
            }
        return self._allowed
