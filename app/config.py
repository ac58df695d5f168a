"""Server configuration, read once from the environment."""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

import msgspec

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/agentlasso"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_JUDGE_PRICES: dict[str, tuple[float, float]] = {
    "claude-haiku-5-5": (0.10, 0.50),
    "claude-sonnet-5-5": (2.0, 10.0),
    "claude-opus-5-5": (4.0, 20.0),
    "claude-haiku-4-5": (1.0, 5.0),
}


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """What the API and worker processes need to know about their surroundings."""

    database_url: str
    redis_url: str
    db_pool_min: int = 2
    db_pool_max: int = 10
    # How long a request waits for a database connection before a 503 with Retry-After.
    db_acquire_timeout_s: float = 5.0
    # Bodies above these limits are refused with 413 before they are read whole.
    max_body_bytes: int = 10 * 1024 * 1024
    max_import_bytes: int = 512 * 1024 * 1024
    max_import_lines: int = 1_000_000
    # An OTLP trace request: its body once decompressed, and the spans it may carry.
    trace_max_body_bytes: int = 32 * 1024 * 1024
    trace_max_spans_per_request: int = 10_000
    # What reading a request costs is in its values, not its bytes (an array of 11 million
    # empty values is 32 KB gzipped): OTLP/JSON's own, lower, decompressed size; the values a
    # request and one attribute may hold (an attribute, each element of an array or kvlist
    # value, and each event count one); attributes per span, event, link or resource
    # (OpenTelemetry's own default is 128); how deep array and kvlist values may nest.
    trace_max_json_body_bytes: int = 8 * 1024 * 1024
    trace_max_values_per_request: int = 100_000
    trace_max_values_per_attribute: int = 10_000
    trace_max_attributes_per_span: int = 128
    trace_max_value_depth: int = 16
    # A trace's summary keeps at most this many characters of each text (input, reply, error,
    # a message, a tool call's arguments or result) and this many messages and tool calls;
    # each cut is said where it is made.
    trace_max_summary_chars: int = 10_000
    trace_max_summary_items: int = 100
    # Long-polls, event streams and CI batches waiting on runs that one API process holds, in
    # all and for one project: past these a new one is a 503 with Retry-After.
    max_waiters: int = 5_000
    max_waiters_per_project: int = 1_000
    # Requests a second each project may make (sustained), and how many it may save up: all its
    # API keys and web sessions share them, so a new key or session buys no more.
    rate_limit_per_s: float = 100.0
    rate_limit_burst: int = 1_000
    # Page requests a second each web session may make, and how many it may save up (within its
    # project's): one browser tab cannot spend its project's whole rate.
    web_rate_limit_per_s: float = 20.0
    web_rate_limit_burst: int = 200
    # What one project's previews and tests may ask for a minute, in calls: Preview, Grade this
    # reply, Send test message, an agent's invoke and Test key count 1 each, plus 1 per AI judge
    # check they may ask the model about.
    quota_preview_calls_per_min: int = 120
    # What the server's Anthropic key may spend a day (UTC) on one project that has no key of
    # its own (judge calls, previews, generations); past it, its judge checks are not graded.
    server_judge_budget_usd_per_day: float = 10.0
    # Active API keys one project may hold, and keys it may create an hour (from the web app;
    # `agentlasso keys create` is the operator's and bound by neither).
    quota_api_keys: int = 100
    quota_keys_created_per_hour: int = 20
    # Per-project quotas: server-mode runs going on at once, a run's concurrency, agent calls a
    # minute to one host (across every worker), and test cases in one dataset.
    quota_active_runs: int = 50
    quota_run_concurrency: int = 1_000
    quota_agent_host_calls_per_min: int = 1_200_000
    quota_dataset_cases: int = 1_000_000
    # Case generations (and regenerated drafts) a minute per project: each is many model calls,
    # on the project's key or the server's.
    quota_generations_per_min: int = 10
    # The most of a worker's agent-call slots, and of the judge's shared slots, one project may
    # hold (1.0: no cap): a project with a hanging agent or a judge backlog leaves the rest to
    # everyone else.
    project_share: float = 0.8
    # The time grading may take for one request (a CI batch, a preview, a worker's chunk):
    # regular expressions not run by then are not graded, saying so.
    grading_budget_s: float = 5.0
    # Queue namespace: lets several test runs share one Redis without seeing each other's jobs.
    queue_name: str = "agentlasso:queue"
    # 32 bytes, base64: encrypts agent headers at rest. Required outside `agentlasso dev`.
    secret_key: str | None = None
    # Agents on loopback, private or link-local addresses: refused unless allowed (dev allows).
    allow_private_agents: bool = False
    agent_timeout_s: float = 30.0
    agent_max_body_bytes: int = 1024 * 1024
    # An agent's answer outside its body (status line, headers, trailers), in bytes, and its
    # header fields: past either the call fails at once, unretried.
    agent_max_header_bytes: int = 64 * 1024
    agent_max_headers: int = 100
    agent_max_attempts: int = 3
    agent_retry_after_cap_s: float = 10.0
    # A concurrency slot (an agent's max_concurrency, the judge's) is leased for this long and
    # renewed while its call runs; a dead worker's slot comes free after one lease at most.
    slot_lease_s: float = 30.0
    # Where people reach the web app (an http(s) origin, maybe with a path prefix, no trailing
    # slash): run answers, CI output and JUnit files link to run pages under it. None: no links.
    public_url: str | None = None
    # A worker serves GET /metrics and GET /live on this port (None: it serves neither), on
    # every interface: Prometheus and the kubelet reach it from outside the pod.
    metrics_port: int | None = None
    metrics_host: str = "0.0.0.0"  # noqa: S104
    # GET /api/v1/workers lists each worker's host and pid: infrastructure, so only for an
    # install whose projects are all one team's.
    show_worker_hosts: bool = False
    # `agentlasso dev` only: the API also serves the demo support bot.
    demo_agent: bool = False
    # The AI judge. No key: judge checks are not graded, and no call is made.
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    judge_model: str = "claude-sonnet-5-5"
    judge_timeout_s: float = 60.0
    judge_max_attempts: int = 3
    judge_retry_after_cap_s: float = 30.0
    # Judge calls in flight across every worker process together.
    judge_concurrency: int = 20
    # Judge requests a minute across every worker process (0: no pacing). Set it a little
    # under the API's own limit so the fleet is paced rather than answered 429.
    judge_requests_per_minute: int = 0
    # A SCORE within this many points of its floor is judged up to judge_repeats times.
    judge_repeats: int = 3
    judge_repeat_margin: int = 10
    # The most characters of the reply, the case's input, the data context and the expected
    # output the judge is shown (each): it bounds what a verdict costs. Cuts are stated.
    judge_max_input_chars: int = 20_000
    # How long POST /eval-run-results waits for verdicts before answering 202.
    judge_wait_s: float = 25.0
    judge_forced_tool_models: tuple[str, ...] = ("claude-haiku-4-5",)
    # Generating cases (the judge's key and model): the whole request's deadline, model calls
    # in flight for one request, and the tokens one answer (a plan or a case) may take.
    generation_deadline_s: float = 120.0
    generation_concurrency: int = 4
    generation_max_tokens: int = 4096
    # US dollars per million tokens, input and output (late 2026 list prices).
    judge_prices: dict[str, tuple[float, float]] = msgspec.field(
        default_factory=lambda: dict(DEFAULT_JUDGE_PRICES)
    )


# Each setting read from the environment, by field; its default is the field's own.
ENVIRONMENT_VARIABLES = {
    "db_pool_min": "AGENTLASSO_DB_POOL_MIN",
    "db_pool_max": "AGENTLASSO_DB_POOL_MAX",
    "db_acquire_timeout_s": "AGENTLASSO_DB_ACQUIRE_TIMEOUT_S",
    "max_body_bytes": "AGENTLASSO_MAX_BODY_BYTES",
    "max_import_bytes": "AGENTLASSO_MAX_IMPORT_BYTES",
    "max_import_lines": "AGENTLASSO_MAX_IMPORT_LINES",
    "trace_max_body_bytes": "AGENTLASSO_TRACE_MAX_BODY_BYTES",
    "trace_max_spans_per_request": "AGENTLASSO_TRACE_MAX_SPANS_PER_REQUEST",
    "trace_max_json_body_bytes": "AGENTLASSO_TRACE_MAX_JSON_BODY_BYTES",
    "trace_max_values_per_request": "AGENTLASSO_TRACE_MAX_VALUES_PER_REQUEST",
    "trace_max_values_per_attribute": "AGENTLASSO_TRACE_MAX_VALUES_PER_ATTRIBUTE",
    "trace_max_attributes_per_span": "AGENTLASSO_TRACE_MAX_ATTRIBUTES_PER_SPAN",
    "trace_max_value_depth": "AGENTLASSO_TRACE_MAX_VALUE_DEPTH",
    "trace_max_summary_chars": "AGENTLASSO_TRACE_MAX_SUMMARY_CHARS",
    "trace_max_summary_items": "AGENTLASSO_TRACE_MAX_SUMMARY_ITEMS",
    "grading_budget_s": "AGENTLASSO_GRADING_BUDGET_S",
    "rate_limit_per_s": "AGENTLASSO_RATE_LIMIT_PER_S",
    "rate_limit_burst": "AGENTLASSO_RATE_LIMIT_BURST",
    "web_rate_limit_per_s": "AGENTLASSO_WEB_RATE_LIMIT_PER_S",
    "web_rate_limit_burst": "AGENTLASSO_WEB_RATE_LIMIT_BURST",
    "quota_preview_calls_per_min": "AGENTLASSO_QUOTA_PREVIEW_CALLS_PER_MIN",
    "server_judge_budget_usd_per_day": "AGENTLASSO_SERVER_JUDGE_BUDGET_USD_PER_DAY",
    "quota_api_keys": "AGENTLASSO_QUOTA_API_KEYS",
    "quota_keys_created_per_hour": "AGENTLASSO_QUOTA_KEYS_CREATED_PER_HOUR",
    "quota_active_runs": "AGENTLASSO_QUOTA_ACTIVE_RUNS",
    "quota_run_concurrency": "AGENTLASSO_QUOTA_RUN_CONCURRENCY",
    "quota_agent_host_calls_per_min": "AGENTLASSO_QUOTA_AGENT_HOST_CALLS_PER_MIN",
    "quota_dataset_cases": "AGENTLASSO_QUOTA_DATASET_CASES",
    "quota_generations_per_min": "AGENTLASSO_QUOTA_GENERATIONS_PER_MIN",
    "project_share": "AGENTLASSO_PROJECT_SHARE",
    "max_waiters": "AGENTLASSO_MAX_WAITERS",
    "max_waiters_per_project": "AGENTLASSO_MAX_WAITERS_PER_PROJECT",
    "queue_name": "AGENTLASSO_QUEUE",
    "secret_key": "AGENTLASSO_SECRET_KEY",
    "allow_private_agents": "AGENTLASSO_ALLOW_PRIVATE_AGENTS",
    "agent_timeout_s": "AGENTLASSO_AGENT_TIMEOUT_S",
    "agent_max_body_bytes": "AGENTLASSO_AGENT_MAX_BODY_BYTES",
    "agent_max_header_bytes": "AGENTLASSO_AGENT_MAX_HEADER_BYTES",
    "agent_max_headers": "AGENTLASSO_AGENT_MAX_HEADERS",
    "agent_max_attempts": "AGENTLASSO_AGENT_MAX_ATTEMPTS",
    "agent_retry_after_cap_s": "AGENTLASSO_AGENT_RETRY_AFTER_CAP_S",
    "slot_lease_s": "AGENTLASSO_SLOT_LEASE_S",
    "demo_agent": "AGENTLASSO_DEMO_AGENT",
    "metrics_port": "AGENTLASSO_METRICS_PORT",
    "metrics_host": "AGENTLASSO_METRICS_HOST",
    "show_worker_hosts": "AGENTLASSO_SHOW_WORKER_HOSTS",
    "public_url": "AGENTLASSO_PUBLIC_URL",
    "anthropic_api_key": "ANTHROPIC_API_KEY",
    "anthropic_base_url": "ANTHROPIC_BASE_URL",
    "judge_model": "AGENTLASSO_JUDGE_MODEL",
    "judge_timeout_s": "AGENTLASSO_JUDGE_TIMEOUT_S",
    "judge_max_attempts": "AGENTLASSO_JUDGE_MAX_ATTEMPTS",
    "judge_retry_after_cap_s": "AGENTLASSO_JUDGE_RETRY_AFTER_CAP_S",
    "judge_concurrency": "AGENTLASSO_JUDGE_CONCURRENCY",
    "judge_requests_per_minute": "AGENTLASSO_JUDGE_RPM",
    "judge_repeats": "AGENTLASSO_JUDGE_REPEATS",
    "judge_repeat_margin": "AGENTLASSO_JUDGE_REPEAT_MARGIN",
    "judge_wait_s": "AGENTLASSO_JUDGE_WAIT_S",
    "judge_max_input_chars": "AGENTLASSO_JUDGE_MAX_INPUT_CHARS",
    "judge_forced_tool_models": "AGENTLASSO_JUDGE_FORCED_TOOL_MODELS",
    "generation_deadline_s": "AGENTLASSO_GENERATION_DEADLINE_S",
    "generation_concurrency": "AGENTLASSO_GENERATION_CONCURRENCY",
    "generation_max_tokens": "AGENTLASSO_GENERATION_MAX_TOKENS",
}


# Limits, quotas and concurrencies: 0 or less would not limit (a token bucket refilled at 0 a
# second answers "wait minus forever") or would stop everything, so neither is accepted.
MUST_BE_POSITIVE = frozenset({
    "rate_limit_per_s", "rate_limit_burst", "quota_active_runs", "quota_run_concurrency",
    "quota_agent_host_calls_per_min", "quota_dataset_cases", "quota_generations_per_min",
    "project_share", "max_waiters", "max_waiters_per_project", "judge_concurrency",
    "generation_concurrency", "slot_lease_s", "agent_max_attempts", "judge_max_attempts",
    "web_rate_limit_per_s", "web_rate_limit_burst", "quota_preview_calls_per_min",
    "server_judge_budget_usd_per_day", "quota_api_keys", "quota_keys_created_per_hour",
    "agent_max_header_bytes", "agent_max_headers",
    "trace_max_json_body_bytes", "trace_max_values_per_request",
    "trace_max_values_per_attribute", "trace_max_attributes_per_span", "trace_max_value_depth",
    "trace_max_summary_chars", "trace_max_summary_items",
})  # fmt: skip


# Protobuf's parser stops at 100 nested messages, and a level of value nesting is two of them
# under the five of a span's place in the request: deeper could not be read at all.
MAX_TRACE_VALUE_DEPTH = 32


def _parse(name: str, raw: str, kind: Any) -> Any:
    """An environment variable's text as the setting's type; SystemExit saying what is wrong."""
    if kind is bool:
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            noun = "a whole number" if kind is int else "a number"
            raise SystemExit(f"{name} must be {noun}, got {raw!r}") from None
    if kind == tuple[str, ...]:
        return tuple(item.strip() for item in raw.split(",") if item.strip())
    return raw  # text, or text or None


def parse_public_url(name: str, raw: str) -> str:
    """The web app's address without a trailing slash; SystemExit saying what is wrong."""
    url = urllib.parse.urlsplit(raw.strip())
    # A user name or password would be printed in every CI log that links a run: refused, and
    # not echoed back.
    if url.username is not None or url.password is not None:
        raise SystemExit(f"{name} must not carry a user name or password.")
    if url.scheme not in ("http", "https") or not url.hostname or _bad_port(url):
        problem = "an http or https address"
    elif "?" in raw or "#" in raw:
        problem = "an address without a query or fragment"
    elif any(char.isspace() for char in raw.strip()):
        problem = "an address without spaces"
    else:
        return urllib.parse.urlunsplit(url._replace(path=url.path.rstrip("/")))
    raise SystemExit(
        f"{name} must be {problem}, like https://lasso.example.com (optionally with a path "
        f"prefix: https://example.com/lasso), got {raw!r}"
    )


def _bad_port(url: urllib.parse.SplitResult) -> bool:
    try:
        url.port  # noqa: B018 (reading it validates it)
    except ValueError:
        return True
    return False


def _prices_env(name: str) -> dict[str, tuple[float, float]]:
    """The built-in price table, with models from a JSON object {"model": [in, out]} on top."""
    prices = dict(DEFAULT_JUDGE_PRICES)
    raw = os.environ.get(name)
    if raw:
        try:
            extra = msgspec.json.decode(raw, type=dict[str, tuple[float, float]])
        except msgspec.DecodeError as exc:
            raise SystemExit(f'{name} must be JSON like {{"model": [2.0, 10.0]}}: {exc}') from exc
        prices.update(extra)
    return prices


def load_settings() -> Settings:
    """Settings from the environment; each one not set (or empty) keeps its default."""
    values: dict[str, Any] = {
        "database_url": os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL,
        "redis_url": os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL,
        "judge_prices": _prices_env("AGENTLASSO_JUDGE_PRICES"),
    }
    for field in msgspec.structs.fields(Settings):
        name = ENVIRONMENT_VARIABLES.get(field.name)
        raw = os.environ.get(name) if name else None
        # Empty is unset, but for a list, where it is the empty list.
        if name and raw is not None and (raw or field.type == tuple[str, ...]):
            kind = int if field.type == int | None else field.type
            values[field.name] = _parse(name, raw, kind)
            if field.name in MUST_BE_POSITIVE and values[field.name] <= 0:
                raise SystemExit(f"{name} must be more than 0, got {raw!r}")
    if not values.get("project_share", 1) <= 1:
        raise SystemExit(
            f"AGENTLASSO_PROJECT_SHARE must be at most 1, got {values['project_share']}"
        )
    if not values.get("trace_max_value_depth", 1) <= MAX_TRACE_VALUE_DEPTH:
        raise SystemExit(
            f"AGENTLASSO_TRACE_MAX_VALUE_DEPTH must be at most {MAX_TRACE_VALUE_DEPTH}, "
            f"got {values['trace_max_value_depth']}"
        )
    if values.get("public_url") is not None:
        values["public_url"] = parse_public_url("AGENTLASSO_PUBLIC_URL", values["public_url"])
    return Settings(**values)
