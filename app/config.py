"""Server configuration, read once from the environment."""

from __future__ import annotations

import os

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
    # Long-polls, event streams and CI batches waiting on runs that one API process holds, in
    # all and for one project: past these a new one is a 503 with Retry-After.
    max_waiters: int = 5_000
    max_waiters_per_project: int = 1_000
    # Requests a second each API key may make (sustained), and how many it may save up.
    rate_limit_per_s: float = 100.0
    rate_limit_burst: int = 1_000
    # Per-project quotas: server-mode runs going on at once, a run's concurrency, agent calls a
    # minute to one host (across every worker), and test cases in one dataset.
    quota_active_runs: int = 50
    quota_run_concurrency: int = 1_000
    quota_agent_host_calls_per_min: int = 60_000
    quota_dataset_cases: int = 1_000_000
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
    agent_max_attempts: int = 3
    agent_retry_after_cap_s: float = 10.0
    # A concurrency slot (an agent's max_concurrency, the judge's) is leased for this long and
    # renewed while its call runs; a dead worker's slot comes free after one lease at most.
    slot_lease_s: float = 30.0
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
    # How long POST /eval-run-results waits for verdicts before answering 202.
    judge_wait_s: float = 25.0
    judge_forced_tool_models: tuple[str, ...] = ("claude-haiku-4-5",)
    # US dollars per million tokens, input and output (late 2026 list prices).
    judge_prices: dict[str, tuple[float, float]] = msgspec.field(
        default_factory=lambda: dict(DEFAULT_JUDGE_PRICES)
    )


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise SystemExit(f"{name} must be a whole number, got {raw!r}") from exc


def _bool_env(name: str) -> bool:
    return (os.environ.get(name) or "").strip().lower() in ("1", "true", "yes", "on")


def _float_env(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise SystemExit(f"{name} must be a number, got {raw!r}") from exc


def _list_env(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return tuple(item.strip() for item in raw.split(",") if item.strip())


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
    """Settings from the environment, with local defaults for development."""
    return Settings(
        database_url=os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL,
        redis_url=os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL,
        db_pool_min=_int_env("AGENTLASSO_DB_POOL_MIN", 2),
        db_pool_max=_int_env("AGENTLASSO_DB_POOL_MAX", 10),
        db_acquire_timeout_s=_float_env("AGENTLASSO_DB_ACQUIRE_TIMEOUT_S", 5.0),
        max_body_bytes=_int_env("AGENTLASSO_MAX_BODY_BYTES", 10 * 1024 * 1024),
        max_import_bytes=_int_env("AGENTLASSO_MAX_IMPORT_BYTES", 512 * 1024 * 1024),
        max_import_lines=_int_env("AGENTLASSO_MAX_IMPORT_LINES", 1_000_000),
        grading_budget_s=_float_env("AGENTLASSO_GRADING_BUDGET_S", 5.0),
        rate_limit_per_s=_float_env("AGENTLASSO_RATE_LIMIT_PER_S", 100.0),
        rate_limit_burst=_int_env("AGENTLASSO_RATE_LIMIT_BURST", 1_000),
        quota_active_runs=_int_env("AGENTLASSO_QUOTA_ACTIVE_RUNS", 50),
        quota_run_concurrency=_int_env("AGENTLASSO_QUOTA_RUN_CONCURRENCY", 1_000),
        quota_agent_host_calls_per_min=_int_env(
            "AGENTLASSO_QUOTA_AGENT_HOST_CALLS_PER_MIN", 60_000
        ),
        quota_dataset_cases=_int_env("AGENTLASSO_QUOTA_DATASET_CASES", 1_000_000),
        max_waiters=_int_env("AGENTLASSO_MAX_WAITERS", 5_000),
        max_waiters_per_project=_int_env("AGENTLASSO_MAX_WAITERS_PER_PROJECT", 1_000),
        queue_name=os.environ.get("AGENTLASSO_QUEUE") or "agentlasso:queue",
        secret_key=os.environ.get("AGENTLASSO_SECRET_KEY") or None,
        allow_private_agents=_bool_env("AGENTLASSO_ALLOW_PRIVATE_AGENTS"),
        agent_timeout_s=_float_env("AGENTLASSO_AGENT_TIMEOUT_S", 30.0),
        agent_max_body_bytes=_int_env("AGENTLASSO_AGENT_MAX_BODY_BYTES", 1024 * 1024),
        agent_max_attempts=_int_env("AGENTLASSO_AGENT_MAX_ATTEMPTS", 3),
        agent_retry_after_cap_s=_float_env("AGENTLASSO_AGENT_RETRY_AFTER_CAP_S", 10.0),
        slot_lease_s=_float_env("AGENTLASSO_SLOT_LEASE_S", 30.0),
        demo_agent=_bool_env("AGENTLASSO_DEMO_AGENT"),
        anthropic_api_key=os.environ.get("ANTHROPIC_API_KEY") or None,
        anthropic_base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
        judge_model=os.environ.get("AGENTLASSO_JUDGE_MODEL") or "claude-sonnet-5-5",
        judge_timeout_s=_float_env("AGENTLASSO_JUDGE_TIMEOUT_S", 60.0),
        judge_max_attempts=_int_env("AGENTLASSO_JUDGE_MAX_ATTEMPTS", 3),
        judge_retry_after_cap_s=_float_env("AGENTLASSO_JUDGE_RETRY_AFTER_CAP_S", 30.0),
        judge_concurrency=_int_env("AGENTLASSO_JUDGE_CONCURRENCY", 20),
        judge_requests_per_minute=_int_env("AGENTLASSO_JUDGE_RPM", 0),
        judge_repeats=_int_env("AGENTLASSO_JUDGE_REPEATS", 3),
        judge_repeat_margin=_int_env("AGENTLASSO_JUDGE_REPEAT_MARGIN", 10),
        judge_wait_s=_float_env("AGENTLASSO_JUDGE_WAIT_S", 25.0),
        judge_forced_tool_models=_list_env(
            "AGENTLASSO_JUDGE_FORCED_TOOL_MODELS", ("claude-haiku-4-5",)
        ),
        judge_prices=_prices_env("AGENTLASSO_JUDGE_PRICES"),
    )
