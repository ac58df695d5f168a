"""The server commands: dev, api, worker, migrate, keys, audit, secret-key (`users`: cli/users.py).

Each imports what it starts only when it runs, so the CI gate commands (`ci`, `run`) load
nothing of the server: they are the commands a user's CI machine runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from agentlasso.domain.scopes import SCOPE_MEANINGS, Scope


def dev(args: argparse.Namespace) -> int:
    """`agentlasso dev`: the whole platform on this machine."""
    from agentlasso.devstack.dev import run_dev

    return run_dev(data_dir=Path(args.data_dir), host=args.host, port=args.port)


def api(args: argparse.Namespace) -> int:
    """`agentlasso api`: the HTTP API, a production process."""
    log_format = _configure_logging()
    if log_format is None:
        return 1
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from agentlasso.observability.logs import with_access_redaction

    with _refusals_logged(log_format):
        uvicorn.run(
            "agentlasso.server:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            # JSON: uvicorn's lines (its access log too) go through the root logger's JSON handler
            # rather than through uvicorn's own text formatters.
            # Text: uvicorn's own, its access lines' credentials (a sign-in token) redacted.
            log_config=None if log_format == "json" else with_access_redaction(LOGGING_CONFIG),
            # Below a typical orchestrator grace period (30 s), so in-flight requests get answered.
            timeout_graceful_shutdown=10,
        )
    return 0


def worker(args: argparse.Namespace) -> int:
    """`agentlasso worker`: one worker process."""
    log_format = _configure_logging()
    if log_format is None:
        return 1
    with _refusals_logged(log_format):
        from agentlasso_workers.jobs import run_worker

        return run_worker(concurrency=args.concurrency, metrics_port=args.metrics_port)


def _configure_logging() -> str | None:
    """Logs as AGENTLASSO_LOG_FORMAT and AGENTLASSO_LOG_LEVEL say; the format, or None (having
    said why) when either is not valid."""
    from agentlasso.observability.logs import (
        configure_logging,
        log_format_from_env,
        log_level_from_env,
    )

    try:
        log_format = log_format_from_env(os.environ)
        level = log_level_from_env(os.environ)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    configure_logging(log_format, level)
    return log_format


@contextlib.contextmanager
def _refusals_logged(log_format: str) -> Iterator[None]:
    """In JSON, a setting refused at start-up (SystemExit with a message) is logged as a JSON
    line like the rest, rather than printed as plain text among them."""
    try:
        yield
    except SystemExit as exc:
        if log_format != "json" or not isinstance(exc.code, str):
            raise
        logging.getLogger("agentlasso").critical("%s", exc.code)
        raise SystemExit(1) from None


def migrate(_args: argparse.Namespace) -> int:
    """`agentlasso migrate`: apply the migrations not yet applied."""
    from agentlasso.config import load_settings
    from agentlasso.db.migrations import EditedMigration, apply_migrations

    try:
        applied = asyncio.run(apply_migrations(load_settings().database_url))
    except EditedMigration as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for name in applied:
        print(f"applied {name}")
    print(f"{len(applied)} migration(s) applied")
    return 0


def keys_create(args: argparse.Namespace) -> int:
    """`agentlasso keys create`: a new key, alone on the last line."""
    from agentlasso.config import load_settings
    from agentlasso.services.api_keys import create_key_for_project_name

    scope = Scope(args.scope)
    url = load_settings().database_url
    created = asyncio.run(create_key_for_project_name(url, args.project, scope))
    print(
        f"Created an API key of scope {created.scope.value!r} ({SCOPE_MEANINGS[scope]}) for "
        f"project {args.project!r}. It is shown once; store it now."
    )
    print(created.key)
    return 0


def keys_revoke(args: argparse.Namespace) -> int:
    """`agentlasso keys revoke`: revoke the one active key with this prefix."""
    from agentlasso.config import load_settings
    from agentlasso.errors import AgentLassoError
    from agentlasso.services.api_keys import revoke_key_by_prefix

    try:
        asyncio.run(revoke_key_by_prefix(load_settings().database_url, args.key_prefix))
    except AgentLassoError as exc:
        print(f"error: {exc.detail}", file=sys.stderr)
        return 1
    print(f"Revoked the key starting {args.key_prefix}.")
    return 0


def audit_verify(args: argparse.Namespace) -> int:
    """`agentlasso audit verify`: exit 0 when the project's audit log holds, 1 when it breaks."""
    from agentlasso.config import load_settings
    from agentlasso.errors import AgentLassoError
    from agentlasso.services.audit import verify_project_log

    try:
        check = asyncio.run(verify_project_log(load_settings().database_url, args.project))
    except AgentLassoError as exc:
        print(f"error: {exc.detail}", file=sys.stderr)
        return 1
    held = f"{check.held_seq} entries hold"
    if check.held_hash is not None:
        held += f" (the last one's hash: {check.held_hash.hex()})"
    if check.broken is not None:
        print(f"The audit log is broken at entry {check.broken.seq}: {check.broken.reason}.")
        print(f"Before it, {held}.")
        return 1
    print(f"The audit log of {args.project!r} holds: {held}.")
    return 0


def secret_key(_args: argparse.Namespace) -> int:
    """`agentlasso secret-key`: a new AGENTLASSO_SECRET_KEY."""
    from agentlasso.secrets_box import generate_key

    print(generate_key())
    return 0


def add_server_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The server commands and their flags."""
    dev_parser = commands.add_parser("dev", help="run the whole platform on this machine")
    dev_parser.add_argument("--data-dir", default=".agentlasso", help="where embedded data is kept")
    dev_parser.add_argument("--host", default="127.0.0.1")
    dev_parser.add_argument("--port", type=int, default=8000)
    dev_parser.set_defaults(handler=dev)

    api_parser = commands.add_parser("api", help="serve the HTTP API")
    api_parser.add_argument("--host", default="127.0.0.1")
    api_parser.add_argument("--port", type=int, default=8000)
    api_parser.add_argument("--log-level", default="info")
    api_parser.set_defaults(handler=api)

    worker_parser = commands.add_parser("worker", help="run a worker process")
    worker_parser.add_argument("--concurrency", type=int, default=100)
    worker_parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve GET /metrics and GET /live on this port (default: AGENTLASSO_METRICS_PORT)",
    )
    worker_parser.set_defaults(handler=worker)

    commands.add_parser("migrate", help="apply database migrations").set_defaults(handler=migrate)

    _add_key_and_audit_commands(commands)

    commands.add_parser(
        "secret-key",
        help="print a new AGENTLASSO_SECRET_KEY",
        description="Prints a new random key (32 bytes, base64) for AGENTLASSO_SECRET_KEY, which"
        " encrypts agent headers at rest. Give the API and every worker the same key.",
    ).set_defaults(handler=secret_key)


def _add_key_and_audit_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """`agentlasso keys create|revoke` and `agentlasso audit verify`."""
    keys = commands.add_parser("keys", help="manage API keys")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="create a project key")
    create.add_argument("--project", required=True)
    create.add_argument(
        "--scope",
        choices=[scope.value for scope in Scope],
        default=Scope.ADMIN.value,
        # The operator's first key sets the project up (agents, datasets), as keys always did;
        # narrower keys for CI, exporters and readers are asked for by name.
        help="what the key may do: admin (everything, the default), ci (runs and results), "
        "ingest (OTLP traces only), read (GET only, but the audit log)",
    )
    create.set_defaults(handler=keys_create)
    revoke = key_commands.add_parser("revoke", help="revoke a key by its prefix")
    revoke.add_argument("key_prefix")
    revoke.set_defaults(handler=keys_revoke)

    audit = commands.add_parser("audit", help="check the audit log")
    audit_commands = audit.add_subparsers(dest="audit_command", required=True)
    verify = audit_commands.add_parser(
        "verify",
        help="check that no entry of a project's audit log was edited or removed",
        description="Follows the project's audit log from its first entry, recomputing each"
        " entry's hash. Exits 0 when every entry holds, 1 at the first that was edited, removed"
        " or put out of place (it names the entry).",
    )
    verify.add_argument("--project", required=True)
    verify.set_defaults(handler=audit_verify)
