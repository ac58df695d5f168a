"""What PostgreSQL's backends wait on during a run: pg_stat_activity sampled a few times a second.

Used by bench_scaling (each row of its table prints its top waits); a hot row shows here first,
as `Lock:transactionid` or `LWLock:MultiXact*` on the statement that queues on it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re

import asyncpg

SAMPLE_EVERY_S = 0.2
QUERY_WORDS = 6

# Active backends of the bench's database, but this one; CPU when they wait on nothing.
_ACTIVE = """
SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS wait, query
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
  AND backend_type = 'client backend'
"""

Waits = collections.Counter[tuple[str, str]]


def first_words(query: str, words: int = QUERY_WORDS) -> str:
    """The statement's first words, whitespace folded: enough to tell statements apart."""
    return " ".join(re.sub(r"\s+", " ", query).strip().split(" ")[:words])


async def sample_waits(database_url: str, waits: Waits, every_s: float = SAMPLE_EVERY_S) -> None:
    """Until cancelled: count each (wait event, statement) an active backend is seen in."""
    connection = await asyncpg.connect(database_url)
    try:
        while True:
            for row in await connection.fetch(_ACTIVE):
                waits[(row["wait"], first_words(row["query"]))] += 1
            waits[("samples", "")] += 1
            await asyncio.sleep(every_s)
    finally:
        with contextlib.suppress(Exception):
            await connection.close()


def top_waits(waits: Waits, count: int = 8) -> list[str]:
    """The most seen waits (CPU apart), as lines: samples, share of samples, event, statement."""
    samples = waits.get(("samples", ""), 0) or 1
    seen = [(key, n) for key, n in waits.items() if key[0] not in ("samples", "CPU")]
    lines = []
    for (event, query), n in sorted(seen, key=lambda item: -item[1])[:count]:
        lines.append(f"{n:6d} ({n / samples:5.2f}/sample)  {event:32s} {query}")
    busy = sum(n for (event, _), n in waits.items() if event == "CPU")
    lines.append(f"{busy:6d} ({busy / samples:5.2f}/sample)  {'CPU (no wait)':32s} all statements")
    return lines
