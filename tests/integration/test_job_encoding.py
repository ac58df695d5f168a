"""Jobs travel on the queue as JSON: a worker never unpickles what it reads from Redis."""

from __future__ import annotations

import os
import pickle
import uuid
from typing import Any

import msgspec
import pytest

from agentlasso.config import Settings
from agentlasso.domain.runs import ChunkRef
from agentlasso.queue import QueueConnection, connect, deserialize, enqueue_lanes, serialize


async def test_jobs_travel_as_json_and_a_pickled_job_is_refused(settings: Settings) -> None:
    redis: QueueConnection = await connect(settings.redis_url)
    queue_name = f"agentlasso:test:{uuid.uuid4().hex[:8]}"
    try:
        chunk = ChunkRef(uuid.uuid4(), 3, f"chunk:{uuid.uuid4()}:3:1")
        await enqueue_lanes(redis, queue_name, [chunk])
        stored = await redis.get(f"arq:job:{chunk.job_id}")
    finally:
        await redis.delete(queue_name, f"arq:job:{chunk.job_id}")
        await redis.aclose()
    job = msgspec.json.decode(stored)
    assert job["f"] == "run_lane" and job["a"] == [str(chunk.run_id), 3, chunk.job_id]

    class Exploit:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, ("touch /tmp/agentlasso-pwned",))

    with pytest.raises(msgspec.DecodeError):
        deserialize(pickle.dumps({"f": "run_lane", "a": [Exploit()]}))
    assert not os.path.exists("/tmp/agentlasso-pwned")  # noqa: ASYNC240


def test_a_failed_jobs_result_travels_as_the_text_of_its_exception() -> None:
    # arq stores a failed job's exception as its result: JSON keeps what a person reads of it.
    result = {"r": RuntimeError("the chunk could not be stored"), "s": False}
    decoded = deserialize(serialize(result))
    assert decoded == {"r": "RuntimeError('the chunk could not be stored')", "s": False}
    with pytest.raises(TypeError, match="cannot carry a value of type object"):
        serialize({"r": object()})
