"""The asyncpg pool, with msgspec as the jsonb codec."""

from __future__ import annotations

from typing import Any, cast

import asyncpg
import msgspec
from asyncpg.pool import PoolAcquireContext, PoolConnectionProxy

from agentlasso.errors import Unavailable
from agentlasso.observability import metrics

# A connection of our own or one borrowed from the pool: the db modules take either.
Connection = asyncpg.Connection | PoolConnectionProxy
# Anything a single query can run on.
Executor = Connection | asyncpg.Pool

_encoder = msgspec.json.Encoder()
# jsonb cannot hold the character U+0000, which an agent's reply may well contain. A value with
# one is stored as its JSON text under this one key, and read back as the value it was.
NUL_ESCAPED_KEY = "__agentlasso_json_with_nul__"
_NUL = b"\\u0000"


def _encode_jsonb(value: Any) -> bytes:
    # jsonb's binary format is a version byte then the text; COPY needs the binary format.
    text = _encoder.encode(value)
    if _NUL in text:
        text = _encoder.encode({NUL_ESCAPED_KEY: text.decode("utf-8")})
    return b"\x01" + text


def jsonb_text(value: Any) -> str:
    """A value as the text of a jsonb, for arrays of jsonb (where a list would read as a
    dimension of the array); read back through the codec like any other jsonb."""
    return _encode_jsonb(value)[1:].decode("utf-8")


def _decode_jsonb(data: bytes) -> Any:
    value = msgspec.json.decode(data[1:])
    if type(value) is dict and len(value) == 1 and NUL_ESCAPED_KEY in value:
        return msgspec.json.decode(value[NUL_ESCAPED_KEY])
    return value


async def init_connection(connection: asyncpg.Connection) -> None:
    """Register the jsonb codec on a new connection."""
    await connection.set_type_codec(
        "jsonb",
        schema="pg_catalog",
        encoder=_encode_jsonb,
        decoder=_decode_jsonb,
        format="binary",
    )


class BoundedPool(asyncpg.Pool):
    """A pool whose every acquire gives up after `acquire_timeout_s`, saying the server is busy.

    Without a bound, slow clients that each hold a connection make every other request wait
    for one indefinitely, authentication included; with it they get a 503 and Retry-After.
    """

    acquire_timeout_s: float = 5.0
    # Acquires not yet answered: above zero for long, the pool is too small for the load.
    waiting: int = 0

    def acquire(self, *, timeout: float | None = None) -> PoolAcquireContext:
        return _BoundedAcquire(self, self.acquire_timeout_s if timeout is None else timeout)

    def in_use(self) -> int:
        """Connections lent out right now."""
        return self.get_size() - self.get_idle_size()


class _BoundedAcquire(PoolAcquireContext):
    __slots__ = ()

    async def __aenter__(self) -> PoolConnectionProxy:
        pool = cast(BoundedPool, self.pool)
        pool.waiting += 1
        try:
            connection: PoolConnectionProxy = await super().__aenter__()
        except TimeoutError:
            raise Unavailable(
                "The server is busy: no database connection came free in time. Try again."
            ) from None
        finally:
            pool.waiting -= 1
        return connection


async def keep_session(_connection: asyncpg.Connection) -> None:
    """What a connection going back to the pool needs beyond asyncpg's own rollback: nothing.

    asyncpg's default reset is a round trip per query (RESET ALL, UNLISTEN, CLOSE ALL, and
    releasing advisory locks). Nothing of ours leaves such state on a pooled connection: locks
    are transaction-scoped, settings are SET LOCAL, LISTEN has its own connection."""


async def create_pool(
    database_url: str, *, min_size: int = 2, max_size: int = 10, acquire_timeout_s: float = 5.0
) -> asyncpg.Pool:
    """A bounded pool whose connections speak jsonb through msgspec."""
    # asyncpg.create_pool's own defaults, spelled out: it cannot be told which class to build.
    pool = BoundedPool(
        database_url,
        min_size=min_size,
        max_size=max_size,
        max_queries=50_000,
        max_inactive_connection_lifetime=300.0,
        init=init_connection,
        reset=keep_session,
        loop=None,
        connection_class=asyncpg.Connection,
        record_class=asyncpg.Record,
    )
    pool.acquire_timeout_s = acquire_timeout_s
    await pool
    _observe(pool)
    return pool


def _observe(pool: BoundedPool) -> None:
    """The pool's gauges read this pool (a process has one; the latest wins in tests)."""
    metrics.DB_POOL_CONNECTIONS.labels("in_use").set_function(pool.in_use)
    metrics.DB_POOL_CONNECTIONS.labels("idle").set_function(pool.get_idle_size)
    metrics.DB_POOL_MAX.set_function(pool.get_max_size)
    metrics.DB_POOL_WAITING.set_function(lambda: pool.waiting)


async def connect(database_url: str) -> asyncpg.Connection:
    """One connection with the same codecs as the pool's (for the CLI and migrations)."""
    connection = await asyncpg.connect(database_url)
    await init_connection(connection)
    return connection
