"""The agent's latency in buckets with round edges, as a run's page charts it: the edges the
database counts results between (width_bucket), and its counts read back as buckets."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

# (from_ms, to_ms, results); to_ms None: the bucket of every result from from_ms up.
LatencyBucket = tuple[int, int | None, int]


def latency_edges(lowest_ms: int, highest_ms: int, buckets: int = 10) -> list[int]:
    """Round bucket edges from at most `lowest_ms` to past `highest_ms`: about `buckets`
    steps of 1, 2 or 5 times a power of ten milliseconds."""
    step = nice_step(max(highest_ms - lowest_ms, 1) / buckets)
    first = lowest_ms // step * step
    count = (highest_ms - first) // step + 1
    return [first + step * place for place in range(count + 1)]


def nice_step(raw: float) -> int:
    """The smallest of 1, 2 or 5 times a power of ten at least `raw` (and at least 1)."""
    if raw <= 1:
        return 1
    power: int = 10 ** math.floor(math.log10(raw))
    return next(power * factor for factor in (1, 2, 5, 10) if power * factor >= raw)


def latency_buckets(edges: Sequence[int], counted: Mapping[int, int]) -> list[LatencyBucket]:
    """(from_ms, to_ms, results) per bucket, from counts by PostgreSQL's width_bucket(ms, edges)
    index: i counts edges[i-1] <= ms < edges[i], len(edges) those from the last edge up (shown
    as an open bucket only when it has any)."""
    buckets: list[LatencyBucket] = [
        (edges[index - 1], edges[index], counted.get(index, 0)) for index in range(1, len(edges))
    ]
    if counted.get(len(edges)):
        buckets.append((edges[-1], None, counted[len(edges)]))
    return buckets
