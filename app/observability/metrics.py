"""The platform's Prometheus metrics: every name and label is declared here, once.

Labels only ever take values from small fixed sets (a queue name, an outcome, a status, a
route template): a run, case or project id as a label would grow a series per id and take
Prometheus down with it.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

# Seconds: agent replies run from milliseconds to the 60 s timeout, model calls likewise.
_CALL_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_REQUEST_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 30.0)

QUEUE_DEPTH = Gauge("agentlasso_queue_depth", "Jobs waiting in the Redis queue.", ["queue"])
QUEUE_OLDEST_AGE = Gauge(
    "agentlasso_queue_oldest_age_seconds",
    "How long the oldest job in the Redis queue has waited.",
    ["queue"],
)

CHUNKS_CLAIMED = Counter(
    "agentlasso_chunks_claimed", "Chunks a worker of this process took on.", ["kind"]
)
CHUNKS_DONE = Counter("agentlasso_chunks_done", "Chunks finished and stored.", ["kind"])
CHUNKS_REISSUED = Counter(
    "agentlasso_chunks_reissued",
    "Chunks given out again: their worker stopped beating, or Redis lost the job.",
    ["reason"],
)
CHUNKS_HANDED_BACK = Counter(
    "agentlasso_chunks_handed_back", "Chunks a stopping worker gave back unfinished."
)
LANES_HANDED_OVER = Counter(
    "agentlasso_lanes_handed_over",
    "Lanes this worker queued for another, less loaded worker to take over.",
)
CHUNKS_POISONED = Counter(
    "agentlasso_chunks_poisoned", "Runs failed because one of their chunks died too often."
)

AGENT_CALLS = Counter(
    "agentlasso_agent_calls", "Calls to agents under test, by how they ended.", ["outcome"]
)
AGENT_CALL_DURATION = Histogram(
    "agentlasso_agent_call_duration_seconds",
    "Agent calls, every attempt included.",
    ["outcome"],
    buckets=_CALL_BUCKETS_S,
)

JUDGE_CALLS = Counter(
    "agentlasso_judge_calls",
    "Requests to the model (use: judge or generation), by how they ended.",
    ["use", "outcome"],
)
JUDGE_RATE_LIMITED = Counter(
    "agentlasso_judge_rate_limited", "Model requests answered 429 (too many requests)."
)
JUDGE_TOKENS = Counter(
    "agentlasso_judge_tokens", "Tokens billed by the model.", ["use", "direction"]
)
JUDGE_COST_USD = Counter(
    "agentlasso_judge_cost_usd", "What the model calls cost, by the configured prices.", ["use"]
)

RUNS_ACTIVE = Gauge("agentlasso_runs_active", "Runs not yet finished, by status.", ["status"])
RUNS_FINISHED = Counter(
    "agentlasso_runs_finished", "Runs this process saw finish, by final status.", ["status"]
)
RUN_WAITERS = Gauge(
    "agentlasso_run_waiters", "Clients waiting on a run: long polls and event streams.", ["kind"]
)

DB_POOL_CONNECTIONS = Gauge(
    "agentlasso_db_pool_connections", "The process's PostgreSQL connections.", ["state"]
)
DB_POOL_MAX = Gauge("agentlasso_db_pool_max_connections", "The pool's size limit.")
DB_POOL_WAITING = Gauge(
    "agentlasso_db_pool_waiting", "Tasks waiting for a PostgreSQL connection to come free."
)
EVENT_LOOP_LAG = Gauge(
    "agentlasso_event_loop_lag_seconds",
    "The longest the event loop was late over the last few seconds.",
)

WORKER_CHUNKS_HELD = Gauge("agentlasso_worker_chunks_held", "Chunks this worker is working on.")
WORKER_CALLS_IN_FLIGHT = Gauge(
    "agentlasso_worker_agent_calls_in_flight", "Agent calls this worker is waiting on."
)
WORKER_HEARTBEAT_AGE = Gauge(
    "agentlasso_worker_heartbeat_age_seconds", "Since this worker last told the database it lives."
)

HTTP_REQUESTS = Counter(
    "agentlasso_http_requests",
    "Requests answered, by route template.",
    ["method", "route", "status"],
)
HTTP_REQUEST_DURATION = Histogram(
    "agentlasso_http_request_duration_seconds",
    "Time to answer, by route template.",
    ["method", "route"],
    buckets=_REQUEST_BUCKETS_S,
)

TRACE_BATCHES_WAITING = Gauge(
    "agentlasso_trace_batches_waiting", "Accepted trace requests not yet read by a worker."
)

RULE_TRACES_GRADED = Counter(
    "agentlasso_rule_traces_graded",
    "Production traces graded by a trace rule, by outcome (a late span grades one again).",
    ["outcome"],
)
RULE_GRADING_SECONDS = Histogram(
    "agentlasso_rule_grading_seconds",
    "Time to grade one claim of a rule's traces (judge calls included).",
    buckets=_REQUEST_BUCKETS_S,
)
ALERTS_EVALUATED = Counter(
    "agentlasso_alerts_evaluated", "Alert evaluations, by the state each found.", ["state"]
)
ALERT_WEBHOOKS = Counter(
    "agentlasso_alert_webhooks",
    "Alert webhook deliveries, by outcome (delivered, retried, gave_up).",
    ["outcome"],
)

SCRAPE_REFRESH_FAILURES = Counter(
    "agentlasso_scrape_refresh_failures",
    "Scrapes whose gauges from PostgreSQL or Redis could not be read (they kept their values).",
)

CONTENT_TYPE = CONTENT_TYPE_LATEST


def exposition() -> bytes:
    """Every metric of this process in Prometheus' text format."""
    return generate_latest(REGISTRY)
