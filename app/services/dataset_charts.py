"""The figures a dataset's page charts: its last runs' pass rates, and its criteria that fail
most often in them (counted in a sample, see app/db/dataset_charts.py)."""

from __future__ import annotations

from uuid import UUID

import msgspec

from agentlasso.db import dataset_charts as chart_rows
from agentlasso.db.dataset_charts import CriterionFailures, RunPassCount
from agentlasso.services.platform import Platform


class DatasetTrends(msgspec.Struct, frozen=True, kw_only=True):
    """A dataset's newest runs, oldest first, and its most failed criteria in their sample."""

    runs: list[RunPassCount]
    criteria: list[CriterionFailures]
    # Results of each run the criteria were counted in, at most.
    sampled_per_run: int


async def dataset_trends(platform: Platform, project_id: UUID, dataset_id: UUID) -> DatasetTrends:
    """The pass rate of the dataset's last runs and its criteria's failure rates in them."""
    async with platform.pool.acquire() as connection:
        runs = await chart_rows.run_pass_counts(connection, project_id, dataset_id)
        # No run has a result to sample: the second query is not worth its round trip.
        criteria = (
            await chart_rows.criterion_failures(connection, project_id, dataset_id)
            if any(run.graded for run in runs)
            else []
        )
    return DatasetTrends(
        runs=runs, criteria=criteria, sampled_per_run=chart_rows.RESULTS_SAMPLED_PER_RUN
    )
