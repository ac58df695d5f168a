"""The one place that knows how jobs travel through Redis (arq), so it could be swapped.

Jobs only carry ids: what to do, and whether it was done, lives in PostgreSQL (run_chunks).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import in_progress_key_prefix, job_key_prefix
from arq.jobs import serialize_job
from arq.utils import timestamp_ms

RUN_LANE = "run_lane"
# arq's own default: a job not started within a day is dropped (the reaper re-issues it).
JOB_EXPIRES_MS = 24 * 3600 * 1000


async def connect(redis_url: str) -> ArqRedis:
    """A Redis connection that can enqueue jobs."""
    return await create_pool(RedisSettings.from_dsn(redis_url))


async def enqueue_lanes(
    redis: ArqRedis, queue_name: str, chunks: Iterable[tuple[UUID, int, str]]
) -> int:
    """Enqueue one lane job per (run_id, chunk_no, job_id) in a single round trip."""
    now_ms = timestamp_ms()
    pipe = redis.pipeline(transaction=False)
    count = 0
    for run_id, chunk_no, job_id in chunks:
        payload = serialize_job(RUN_LANE, (str(run_id), chunk_no, job_id), {}, None, now_ms)
        pipe.psetex(job_key_prefix + job_id, JOB_EXPIRES_MS, payload)
        pipe.zadd(queue_name, {job_id: now_ms})
        count += 1
    if count:
        await pipe.execute()
    return count


async def missing_jobs(redis: ArqRedis, job_ids: Sequence[str]) -> list[str]:
    """The jobs Redis no longer holds, queued or running (lost in a Redis restart, say)."""
    if not job_ids:
        return []
    pipe = redis.pipeline(transaction=False)
    for job_id in job_ids:
        pipe.exists(job_key_prefix + job_id, in_progress_key_prefix + job_id)
    found: list[Any] = await pipe.execute()
    return [job_id for job_id, exists in zip(job_ids, found, strict=True) if not exists]
