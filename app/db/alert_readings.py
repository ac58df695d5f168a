"""What an alert reads over its window: a trace rule's latest grades, or a dataset's finished
runs (their stored counters, and their results for latency and a check's failures)."""

from __future__ import annotations

from uuid import UUID

from agentlasso.db.pool import Executor
from agentlasso.domain.alerts import Alert, Reading

_RULE_WINDOW = "rule_id = $1 AND graded_at >= now() - make_interval(secs => $2)"

_RULE_READINGS = {
    "pass_rate": f"""
        SELECT avg(CASE WHEN passed THEN 1.0 ELSE 0.0 END) AS value, count(*) AS samples
        FROM trace_evaluations WHERE {_RULE_WINDOW} AND graded""",
    "error_rate": f"""
        SELECT avg(CASE WHEN trace_error THEN 1.0 ELSE 0.0 END) AS value, count(*) AS samples
        FROM trace_evaluations WHERE {_RULE_WINDOW}""",
    "p95_latency_ms": f"""
        SELECT percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms) AS value,
               count(*) AS samples
        FROM trace_evaluations WHERE {_RULE_WINDOW}""",
    "judge_cost_usd": f"""
        SELECT CASE WHEN count(*) > 0 THEN sum(judge_cost_usd) END AS value, count(*) AS samples
        FROM trace_evaluations WHERE {_RULE_WINDOW}""",
    "check_fail_rate": f"""
        SELECT avg(CASE WHEN c->>'status' = 'failed' THEN 1.0 ELSE 0.0 END) AS value,
               count(*) AS samples
        FROM trace_evaluations e
        CROSS JOIN LATERAL jsonb_array_elements(e.result->'check_results') c
        WHERE {_RULE_WINDOW} AND c->>'id' = $3 AND c->>'status' IN ('passed', 'failed')""",
}

# Runs of the dataset that finished within the window.
_RUNS = """
    SELECT id, passed, graded, errored, done, judge_cost_usd FROM eval_runs
    WHERE project_id = $3 AND dataset_id = $1
      AND finished_at >= now() - make_interval(secs => $2) AND status = 'completed'"""

_DATASET_READINGS = {
    "pass_rate": f"""
        SELECT sum(passed)::float8 / nullif(sum(graded), 0) AS value,
               coalesce(sum(graded), 0) AS samples
        FROM ({_RUNS}) r""",
    "error_rate": f"""
        SELECT sum(errored)::float8 / nullif(sum(done), 0) AS value,
               coalesce(sum(done), 0) AS samples
        FROM ({_RUNS}) r""",
    "judge_cost_usd": f"""
        SELECT CASE WHEN count(*) > 0 THEN sum(judge_cost_usd) END AS value, count(*) AS samples
        FROM ({_RUNS}) r""",
    "p95_latency_ms": f"""
        SELECT percentile_disc(0.95) WITHIN GROUP (ORDER BY cr.agent_latency_ms) AS value,
               count(cr.agent_latency_ms) AS samples
        FROM ({_RUNS}) r JOIN case_results cr ON cr.run_id = r.id
        WHERE cr.agent_latency_ms IS NOT NULL""",
    "check_fail_rate": f"""
        SELECT avg(CASE WHEN c->>'status' = 'failed' THEN 1.0 ELSE 0.0 END) AS value,
               count(*) AS samples
        FROM ({_RUNS}) r JOIN case_results cr ON cr.run_id = r.id
        CROSS JOIN LATERAL jsonb_array_elements(cr.check_results) c
        WHERE c->>'id' = $4 AND c->>'status' IN ('passed', 'failed')""",
}


async def read_metric(executor: Executor, alert: Alert) -> Reading:
    """The alert's metric over its window."""
    if alert.rule_id is not None:
        sql = _RULE_READINGS[alert.metric]
        arguments: tuple[object, ...] = (alert.rule_id, alert.window_s)
    else:
        sql = _DATASET_READINGS[alert.metric]
        arguments = (alert.dataset_id, alert.window_s, alert.project_id)
    if alert.metric == "check_fail_rate":
        arguments += (alert.check_id,)
    row = await executor.fetchrow(sql, *arguments)
    assert row is not None
    value = row["value"]
    return Reading(value=None if value is None else float(value), samples=int(row["samples"]))


_FAILED_TRACES = """
SELECT trace_id FROM trace_evaluations
WHERE rule_id = $1 AND graded_at >= now() - make_interval(secs => $2) AND graded AND NOT passed
ORDER BY graded_at DESC LIMIT $3
"""

_FAILED_CASES = f"""
SELECT cr.run_id, cr.test_case_id FROM ({_RUNS}) r
JOIN case_results cr ON cr.run_id = r.id AND cr.outcome = 'failed'
ORDER BY r.id, cr.seq DESC LIMIT $4
"""


async def failing_traces(executor: Executor, rule_id: UUID, window_s: int, limit: int) -> list[str]:
    """The rule's latest failed traces within the window."""
    rows = await executor.fetch(_FAILED_TRACES, rule_id, window_s, limit)
    return [row["trace_id"] for row in rows]


async def failing_cases(executor: Executor, alert: Alert, limit: int) -> list[tuple[UUID, UUID]]:
    """(run, test case) of failed results of the dataset's runs within the window."""
    rows = await executor.fetch(
        _FAILED_CASES, alert.dataset_id, alert.window_s, alert.project_id, limit
    )
    return [(row["run_id"], row["test_case_id"]) for row in rows]
