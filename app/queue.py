"""The one place that knows how jobs travel through Redis (arq), so it could be swapped.

Jobs only carry ids: what to do, and whether it was done, lives in PostgreSQL (run_chunks).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, cast

import msgspec
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import in_progress_key_prefix, job_key_prefix
from arq.jobs import serialize_job
from arq.utils import timestamp_ms
from arq.worker import Worker, get_kwargs
from redis.exceptions import RedisError

from agentlasso.domain.runs import ChunkRef

log = logging.getLogger("agentlasso.queue")

# A Redis connection that can enqueue jobs (and, being a redis-py client, do anything else).
QueueConnection = ArqRedis

RUN_LANE = "run_lane"


def serialize(job: dict[str, Any]) -> bytes:
    """Jobs and results travel as JSON, never pickle: whoever can write to Redis must not be
    able to run code in a worker. A failed job's result is its exception, kept as its repr."""
    return msgspec.json.encode(job, enc_hook=_as_text)


def _as_text(value: object) -> str:
    """What JSON cannot hold (a failed job's exception), as the text a person reads."""
    if isinstance(value, BaseException):
        return repr(value)
    raise TypeError(f"a job cannot carry a value of type {type(value).__name__}")


def deserialize(data: bytes) -> dict[str, Any]:
    """A job or result written by `serialize`; anything else fails that job only."""
    job = msgspec.json.decode(data)
    if not isinstance(job, dict):
        raise ValueError("a job is a JSON object")
    return job


# arq's own default: a job not started within a day is dropped (the reaper re-issues it).
JOB_EXPIRES_MS = 24 * 3600 * 1000


def redis_settings(redis_url: str) -> RedisSettings:
    """arq's connection settings for a Redis URL."""
    return RedisSettings.from_dsn(redis_url)


async def connect(redis_url: str) -> QueueConnection:
    """A Redis connection that can enqueue jobs."""
    return await create_pool(
        redis_settings(redis_url), job_serializer=serialize, job_deserializer=deserialize
    )


async def enqueue_lanes(redis: QueueConnection, queue_name: str, chunks: Sequence[ChunkRef]) -> int:
    """Enqueue one lane job per chunk in a single round trip."""
    now_ms = timestamp_ms()
    pipe = redis.pipeline(transaction=False)
    for chunk in chunks:
        args = (str(chunk.run_id), chunk.chunk_no, chunk.job_id)
        payload = serialize_job(RUN_LANE, args, {}, None, now_ms, serializer=serialize)
        pipe.psetex(job_key_prefix + chunk.job_id, JOB_EXPIRES_MS, payload)
        pipe.zadd(queue_name, {chunk.job_id: now_ms})
    if chunks:
        await pipe.execute()
    return len(chunks)


async def enqueue_quietly(
    redis: QueueConnection, queue_name: str, chunks: Sequence[ChunkRef]
) -> None:
    """Enqueue chunks already queued in PostgreSQL; if Redis is away, the reaper re-issues them."""
    if not chunks:
        return
    try:
        await enqueue_lanes(redis, queue_name, chunks)
    except Exception:  # Redis away: the chunks are queued in PostgreSQL; the reaper re-issues
        log.exception("could not enqueue %d chunk(s); the reaper will re-issue them", len(chunks))


async def missing_jobs(redis: QueueConnection, job_ids: Sequence[str]) -> list[str]:
    """The jobs Redis no longer holds, queued or running (lost in a Redis restart, say)."""
    if not job_ids:
        return []
    pipe = redis.pipeline(transaction=False)
    for job_id in job_ids:
        pipe.exists(job_key_prefix + job_id, in_progress_key_prefix + job_id)
    found: list[Any] = await pipe.execute()
    return [job_id for job_id, exists in zip(job_ids, found, strict=True) if not exists]


# Jobs looked at for the queue's gauges; beyond this many, the depth is counted but not aged.
_DEPTH_LOOK_AT = 10_000
# A job waiting this long is taken by a worker even without room: a full pool still starts
# small runs' lanes and judge work within a few seconds, and shares its slots with them.
_TAKE_ANYWAY_AFTER_MS = 1_000
# A worker whose poll finds Redis away waits this long before it polls again.
_REDIS_AWAY_S = 0.5


async def depth(redis: QueueConnection, queue_name: str) -> tuple[int, float]:
    """Jobs waiting to start, and how long the oldest has waited, in seconds. arq keeps a job
    in the queue until it ends, so running ones are told apart by their in-progress key."""
    entries: list[tuple[bytes, float]] = await redis.zrange(
        queue_name, 0, _DEPTH_LOOK_AT - 1, withscores=True
    )
    total: int = await redis.zcard(queue_name)
    running = await _running(redis, [job_id for job_id, _ in entries])
    waiting = [score for (job_id, score) in entries if job_id not in running]
    age_s = max(0.0, (timestamp_ms() - waiting[0]) / 1000) if waiting else 0.0
    return total - len(running), age_s


async def _running(redis: QueueConnection, job_ids: Sequence[bytes]) -> set[bytes]:
    """The jobs among these that a worker has started (one round trip)."""
    if not job_ids:
        return set()
    pipe = redis.pipeline(transaction=False)
    for job_id in job_ids:
        pipe.exists(in_progress_key_prefix + job_id.decode())
    found: list[int] = await pipe.execute()
    return {job_id for job_id, started in zip(job_ids, found, strict=True) if started}


class _RoomAwareWorker(Worker):
    """An arq worker that starts only the jobs it has room for, as `ctx["job_room"]()` says.

    arq itself starts every queued job it reads, up to max_jobs: the first worker to poll
    would take a whole run's lanes, and a worker added later would find nothing to do. This
    one also skips, in one round trip, the jobs already running elsewhere (arq keeps them in
    the queue until they end, and would otherwise check each in a transaction of its own).
    """

    async def _poll_iteration(self) -> None:
        # arq lets a Redis error out of its poll, which ends the worker: a Redis restart would
        # take every worker down with it. The poll is tried again instead; what Redis lost is
        # re-issued from PostgreSQL by the reaper once it is back.
        try:
            await super()._poll_iteration()
        except (RedisError, OSError):
            log.warning("the job queue did not answer; polling again in %.1f s", _REDIS_AWAY_S)
            await asyncio.sleep(_REDIS_AWAY_S)

    async def start_jobs(self, job_ids: list[bytes]) -> None:
        running = await _running(self.pool, job_ids)
        waiting = [job_id for job_id in job_ids if job_id not in running]
        # Jobs that take no room (a judge chunk waits on the judge, not on agent slots) start
        # whatever the room; the others as many as there is room for.
        free: list[bytes] = []
        roomy: list[bytes] = []
        for job_id in waiting:
            (roomy if self._needs_room(job_id) else free).append(job_id)
        room = self._room(len(roomy))
        if room == 0 and roomy and await self._waited_long(roomy[0]):
            room = 1
        await super().start_jobs(free + roomy[:room])

    def _needs_room(self, job_id: bytes) -> bool:
        needs_room = self.ctx.get("job_needs_room")
        return needs_room is None or bool(needs_room(job_id.decode()))

    def _room(self, wanted: int) -> int:
        job_room = self.ctx.get("job_room")
        return wanted if job_room is None else min(wanted, int(job_room()))

    async def _waited_long(self, job_id: bytes) -> bool:
        score = await self.pool.zscore(self.queue_name, job_id)
        return score is not None and timestamp_ms() - score > _TAKE_ANYWAY_AFTER_MS


def run_worker(settings_class: type, ctx: dict[str, Any]) -> None:
    """Run an arq worker with these settings until it is told to stop (SIGINT or SIGTERM).
    From start-up on, `ctx["job_room"]`, if set, says how many more jobs it may start, and
    `ctx["job_needs_room"](job_id)` which jobs count against that room (all, if unset)."""
    settings: dict[str, Any] = get_kwargs(cast(Any, settings_class))
    _RoomAwareWorker(**settings, ctx=ctx).run()
