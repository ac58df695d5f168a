"""Caching of the web app's own CSS and JS: a year for the URL a page links to, which carries
the file's content hash, and no longer than a look for any other."""

from __future__ import annotations

import functools
from typing import cast
from urllib.parse import parse_qs

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from agentlasso.web.rendering import STATIC_DIR, static_url

CURRENT = b"public, max-age=31536000, immutable"
# Another version's URL (a page from a server of an older or newer release, during a rolling
# deploy): this server's file, which is not that version's, must not be kept under it.
NOT_CURRENT = b"no-cache"
_STATIC_PREFIX = "/static/"


def cached_when_current(app: ASGIApp) -> ASGIApp:
    """Middleware: Cache-Control by whether the URL's hash is the file's own."""

    async def with_cache_control(scope: Scope, receive: Receive, send: Send) -> None:
        policy = CURRENT if _is_current(scope) else NOT_CURRENT

        async def send_with_policy(message: Message) -> None:
            # A file is cached by its policy; an error (a 404 page) keeps the page's headers.
            if message["type"] == "http.response.start" and message["status"] < 400:
                replaced = (b"cache-control", b"x-content-type-options")
                headers = [
                    *(pair for pair in message.get("headers", ()) if pair[0] not in replaced),
                    (b"cache-control", policy),
                    (b"x-content-type-options", b"nosniff"),
                ]
                message = cast(Message, {**message, "headers": headers})
            await send(message)

        await app(scope, receive, send_with_policy)

    return with_cache_control


def _is_current(scope: Scope) -> bool:
    name = scope.get("path", "").removeprefix(_STATIC_PREFIX)
    # Only our own files are hashed: a path a client made up is never read, nor remembered.
    if name not in _our_files():
        return False
    version = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("v")
    return version is not None and static_url(name).endswith(f"?v={version[0]}")


@functools.cache
def _our_files() -> frozenset[str]:
    return frozenset(
        path.relative_to(STATIC_DIR).as_posix() for path in STATIC_DIR.rglob("*") if path.is_file()
    )
