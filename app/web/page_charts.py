"""The charts of the dataset page (its runs' pass rate, its criteria's failure rates) and of the
run page (the agent's latency, failed checks by type), from their services' figures; the time
their queries take is noted in the page's Server-Timing as `charts`."""

from __future__ import annotations

import time
from typing import Any

import msgspec
from litestar import Request

from agentlasso.db.dataset_charts import CriterionFailures, RunPassCount
from agentlasso.domain.checks import PRODUCT_NAMES, Check
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.runs import Run
from agentlasso.http.auth import PlatformDep
from agentlasso.services import dataset_charts as dataset_chart_service
from agentlasso.services import run_charts as run_chart_service
from agentlasso.services.dataset_charts import DatasetTrends
from agentlasso.services.run_charts import RunFigures
from agentlasso.web.charts import Chart, count_bars, latency_histogram, rate_bars, rate_chart
from agentlasso.web.server_timing import spent
from agentlasso.web.sessions import session_of

# By any type name a stored result holds (a type a later release dropped reads as itself).
_PRODUCT_NAMES: dict[str, str] = {str(kind): name for kind, name in PRODUCT_NAMES.items()}


async def dataset_charts(
    request: Request[Any, Any, Any], platform: PlatformDep, dataset: Dataset
) -> dict[str, Any]:
    """The dataset page's charts, and the note that says what the criteria were counted in."""
    started = time.perf_counter()
    trends = await dataset_chart_service.dataset_trends(
        platform, session_of(request).project_id, dataset.id
    )
    spent(request, "charts", time.perf_counter() - started)
    return {
        "pass_rate_chart": pass_rate_chart(trends.runs),
        "criteria_chart": criteria_chart(trends),
        "criteria_note": f"Counted in up to {trends.sampled_per_run:,} results of each of these "
        "runs, a different random set of its cases in each run.",
    }


def pass_rate_chart(runs: list[RunPassCount]) -> Chart:
    """Each run's results passed out of those graded, oldest first, each row linking to it."""
    points = [(_run_label(run), run.passed, run.graded) for run in runs]
    return rate_chart(
        f"Pass rate of the last {len(runs)} run{'' if len(runs) == 1 else 's'}",
        points,
        links=[f"/runs/{run.id}" for run in runs],
        chart_id="chart-pass-rate",
    )


def criteria_chart(trends: DatasetTrends) -> Chart:
    """The criteria failed most often, by failure rate."""
    items = [(criterion_label(item), item.failed, item.graded) for item in trends.criteria]
    return rate_bars(
        "Criteria failed most often, by failure rate",
        items,
        label_name="Criterion",
        nothing_to_draw="No criterion failed in the results sampled from these runs."
        if trends.runs
        else "Nothing to draw yet: the dataset has no run.",
        chart_id="chart-criteria",
    )


def criterion_label(item: CriterionFailures) -> str:
    """A criterion as a list of checks names it: the check type, then what it names."""
    kind = str(item.criterion.get("type"))
    name = _PRODUCT_NAMES.get(kind, kind)
    try:
        detail = msgspec.convert(item.criterion, Check).detail()
    except (msgspec.ValidationError, NotImplementedError):
        return name  # a check written under older rules: its type says enough
    return f"{name}: {detail}" if detail else name


def _run_label(run: RunPassCount) -> str:
    when = run.created_at.strftime("%b %d %H:%M")
    return when if run.status == "completed" else f"{when} ({run.status.replace('_', ' ')})"


async def run_charts(
    request: Request[Any, Any, Any], platform: PlatformDep, run: Run
) -> dict[str, Any]:
    """The run page's charts, and the notes that say what each counted."""
    started = time.perf_counter()
    figures = await run_chart_service.run_figures(platform, run)
    spent(request, "charts", time.perf_counter() - started)
    return {
        "latency_chart": latency_histogram(
            "Agent latency",
            figures.latency,
            nothing_to_draw="Nothing to draw: no result of this run reports the agent's latency.",
            chart_id="chart-latency",
        ),
        "latency_note": _latency_note(figures),
        "failures_chart": count_bars(
            "Failed checks by check type",
            [(_PRODUCT_NAMES.get(kind, kind), count) for kind, count in figures.failures],
            label_name="Check type",
            count_name="Failed checks",
            nothing_to_draw="No check has failed in this run"
            + ("." if run.is_final else " so far."),
            chart_id="chart-failures",
        ),
        "failures_note": _failures_note(run, figures),
    }


def _latency_note(figures: RunFigures) -> str:
    counted = (
        f"Counted in {figures.latency_results:,} of the run's results, its cases picked at random."
        if figures.latency_sampled
        else "Every result that reports the agent's latency."
    )
    open_ended = bool(figures.latency) and figures.latency[-1][1] is None
    return counted + (" The slowest 1% share the last bucket." if open_ended else "")


def _failures_note(run: Run, figures: RunFigures) -> str:
    failed = run.graded - run.passed
    if figures.failed_results_counted < failed:
        return (
            f"Counted in the first {figures.failed_results_counted:,} of the run's {failed:,} "
            "failed results."
        )
    return f"Counted in the run's {failed:,} failed result{'' if failed == 1 else 's'}."
