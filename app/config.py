"""Server configuration, read once from the environment."""

from __future__ import annotations

import os

import msgspec

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/agentlasso"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """What the API and worker processes need to know about their surroundings."""

    database_url: str
    redis_url: str
    db_pool_min: int = 2
    db_pool_max: int = 10
    # Bodies above these limits are refused with 413 before they are read whole.
    max_body_bytes: int = 10 * 1024 * 1024
    max_import_bytes: int = 512 * 1024 * 1024
    max_import_lines: int = 1_000_000
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
    # `agentlasso dev` only: the API also serves the demo support bot.
    demo_agent: bool = False


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


def load_settings() -> Settings:
    """Settings from the environment, with local defaults for development."""
    return Settings(
        database_url=os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL,
        redis_url=os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL,
        db_pool_min=_int_env("AGENTLASSO_DB_POOL_MIN", 2),
        db_pool_max=_int_env("AGENTLASSO_DB_POOL_MAX", 10),
        max_body_bytes=_int_env("AGENTLASSO_MAX_BODY_BYTES", 10 * 1024 * 1024),
        max_import_bytes=_int_env("AGENTLASSO_MAX_IMPORT_BYTES", 512 * 1024 * 1024),
        max_import_lines=_int_env("AGENTLASSO_MAX_IMPORT_LINES", 1_000_000),
        queue_name=os.environ.get("AGENTLASSO_QUEUE") or "agentlasso:queue",
        secret_key=os.environ.get("AGENTLASSO_SECRET_KEY") or None,
        allow_private_agents=_bool_env("AGENTLASSO_ALLOW_PRIVATE_AGENTS"),
        agent_timeout_s=_float_env("AGENTLASSO_AGENT_TIMEOUT_S", 30.0),
        agent_max_body_bytes=_int_env("AGENTLASSO_AGENT_MAX_BODY_BYTES", 1024 * 1024),
        agent_max_attempts=_int_env("AGENTLASSO_AGENT_MAX_ATTEMPTS", 3),
        agent_retry_after_cap_s=_float_env("AGENTLASSO_AGENT_RETRY_AFTER_CAP_S", 10.0),
        demo_agent=_bool_env("AGENTLASSO_DEMO_AGENT"),
    )
