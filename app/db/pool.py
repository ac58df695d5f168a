"""The asyncpg pool, with msgspec as the jsonb codec."""

from __future__ import annotations

from typing import Any

import asyncpg
import msgspec
from asyncpg.pool import PoolConnectionProxy

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


async def create_pool(database_url: str, *, min_size: int = 2, max_size: int = 10) -> asyncpg.Pool:
    """A pool whose connections speak jsonb through msgspec."""
    pool = await asyncpg.create_pool(
        database_url, min_size=min_size, max_size=max_size, init=init_connection
    )
    assert pool is not None
    return pool


async def connect(database_url: str) -> asyncpg.Connection:
    """One connection with the same codecs as the pool's (for the CLI and migrations)."""
    connection = await asyncpg.connect(database_url)
    await init_connection(connection)
    return connection
