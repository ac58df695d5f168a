"""An app served over real HTTP on 127.0.0.1, in the test's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import uvicorn
from litestar import Litestar

from tests.support.waiting import eventually


def free_socket() -> socket.socket:
    """A listening-ready socket on a free loopback port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.asynccontextmanager
async def serving(app: Litestar, sock: socket.socket | None = None) -> AsyncIterator[str]:
    """Serve the app (its lifespan running) until the block ends, on `sock` if given (its
    address known beforehand); yields its base URL."""
    sock = sock or free_socket()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))

    async def started() -> bool:
        if task.done():
            task.result()  # the server failed to start: raise its error
        return bool(server.started)

    await eventually(started, 30, what="the test API starting")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
