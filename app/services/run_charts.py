"""The figures a run's page charts: the agent's latency over its results, in buckets with
round edges, and its failed checks by check type (app/db/run_charts.py bounds what each reads)."""

from __future__ import annotations

import msgspec

from agentlasso.db import run_charts as chart_rows
from agentlasso.domain.latency_buckets import LatencyBucket, latency_buckets, latency_edges
from agentlasso.domain.runs import Run
from agentlasso.services.platform import Platform

# About this many buckets between the fastest answer and the 99th percentile; slower ones
# share one open bucket, so that one straggler does not squeeze the rest into a bar or two.
LATENCY_BUCKETS = 10


class RunFigures(msgspec.Struct, frozen=True, kw_only=True):
    """A run's latency buckets (from_ms, to_ms or None for "and over", results), how many
    results they count and whether those are a sample, and its failed checks by type."""

    latency: list[LatencyBucket]
    latency_results: int
    latency_sampled: bool
    failures: list[tuple[str, int]]
    failed_results_counted: int


async def run_figures(platform: Platform, run: Run) -> RunFigures:
    """What the run page's charts show of `run`."""
    async with platform.pool.acquire() as connection:
        spread = await chart_rows.latency_range(connection, run.id)
        buckets: list[LatencyBucket] = []
        if spread.lowest_ms is not None and spread.p99_ms is not None:
            edges = latency_edges(spread.lowest_ms, spread.p99_ms, LATENCY_BUCKETS)
            counted = await chart_rows.latency_counts(connection, run.id, edges)
            buckets = latency_buckets(edges, counted)
        failed = run.graded - run.passed
        failures = await chart_rows.failures_by_type(connection, run.id) if failed else []
    return RunFigures(
        latency=buckets,
        latency_results=spread.results,
        latency_sampled=spread.results >= chart_rows.LATENCIES_READ and run.done > spread.results,
        failures=failures,
        failed_results_counted=min(failed, chart_rows.FAILED_RESULTS_READ),
    )
