"""The `agentlasso` command line: dev, api, worker, migrate, keys, secret-key."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path


def _cmd_dev(args: argparse.Namespace) -> int:
    from app.devstack.dev import run_dev

    return run_dev(data_dir=Path(args.data_dir), host=args.host, port=args.port)


def _cmd_api(args: argparse.Namespace) -> int:
    import uvicorn

    uvicorn.run(
        "app.api.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        # Below a typical orchestrator grace period (30 s), so in-flight requests get answered.
        timeout_graceful_shutdown=10,
    )
    return 0


def _cmd_worker(args: argparse.Namespace) -> int:
    from workers.main import run_worker

    return run_worker(concurrency=args.concurrency)


def _cmd_migrate(_args: argparse.Namespace) -> int:
    from app.config import load_settings
    from app.db.migrations import apply_migrations

    applied = asyncio.run(apply_migrations(load_settings().database_url))
    for name in applied:
        print(f"applied {name}")
    print(f"{len(applied)} migration(s) applied")
    return 0


def _cmd_keys_create(args: argparse.Namespace) -> int:
    from app.config import load_settings
    from app.services.api_keys import create_key_for_project_name

    key = asyncio.run(create_key_for_project_name(load_settings().database_url, args.project))
    print(f"Created an API key for project {args.project!r}. It is shown once; store it now.")
    print(key)
    return 0


def _cmd_keys_revoke(args: argparse.Namespace) -> int:
    from app.config import load_settings
    from app.errors import AgentLassoError
    from app.services.api_keys import revoke_key_by_prefix

    try:
        asyncio.run(revoke_key_by_prefix(load_settings().database_url, args.key_prefix))
    except AgentLassoError as exc:
        print(f"error: {exc.detail}", file=sys.stderr)
        return 1
    print(f"Revoked the key starting {args.key_prefix}.")
    return 0


def _cmd_secret_key(_args: argparse.Namespace) -> int:
    from app.secrets_box import generate_key

    print(generate_key())
    return 0


def _cmd_ci(args: argparse.Namespace) -> int:
    from app.ci_command import CiOptions, run_ci

    api_key = _api_key()
    if not api_key:
        return 2
    options = CiOptions(
        base_url=_base_url(),
        api_key=api_key,
        dataset_id=args.dataset,
        agent_url=args.agent_url,
        agent_cmd=args.agent_cmd,
        threshold=args.threshold,
        concurrency=args.concurrency,
        batch_size=args.batch_size,
        timeout_s=args.timeout,
        junit=Path(args.junit) if args.junit else None,
    )
    return run_ci(options)


def _api_key() -> str | None:
    key = os.environ.get("AGENTLASSO_API_KEY")
    if not key:
        print("error: set AGENTLASSO_API_KEY to a project API key", file=sys.stderr)
    return key


def _base_url() -> str:
    return os.environ.get("AGENTLASSO_URL") or "http://127.0.0.1:8000"


def _cmd_run(args: argparse.Namespace) -> int:
    from app.run_command import RunOptions, run_server

    api_key = _api_key()
    if not api_key:
        return 2
    options = RunOptions(
        base_url=_base_url(),
        api_key=api_key,
        dataset_id=args.dataset,
        agent_id=args.agent,
        wait=args.wait,
        trials=args.trials,
        threshold=args.threshold,
        concurrency=args.concurrency,
        junit=Path(args.junit) if args.junit else None,
    )
    return run_server(options)


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        help="run a dataset against a registered agent (the platform calls it)",
        description="Reads AGENTLASSO_URL (default http://127.0.0.1:8000) and AGENTLASSO_API_KEY."
        " With --wait: exits 0 when the gate passes, 1 when it fails, 2 when AgentLasso cannot"
        " be reached or the run failed.",
    )
    run.add_argument("--dataset", required=True, help="the dataset id")
    run.add_argument("--agent", required=True, help="the registered agent's id")
    run.add_argument("--wait", action="store_true", help="follow the run and gate on it")
    run.add_argument("--trials", type=_positive, default=1, help="calls per case, 1 to 10")
    run.add_argument("--threshold", type=_fraction, help="pass threshold, 0 to 1 (default 1.0)")
    run.add_argument("--concurrency", type=_positive, help="agent calls in flight for this run")
    run.add_argument("--junit", help="write JUnit XML here (with --wait)")
    run.set_defaults(handler=_cmd_run)


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _add_ci(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ci = commands.add_parser(
        "ci",
        help="run a dataset as a CI gate, calling your agent from here",
        description="Reads AGENTLASSO_URL (default http://127.0.0.1:8000) and AGENTLASSO_API_KEY."
        " Exits 0 when the gate passes, 1 when it fails, 2 when AgentLasso cannot be reached.",
    )
    ci.add_argument("--dataset", required=True, help="the dataset id")
    agent = ci.add_mutually_exclusive_group(required=True)
    agent.add_argument("--agent-url", help="POST each case to this URL")
    agent.add_argument(
        "--agent-cmd", help="run this command per case: request on stdin, answer on stdout"
    )
    ci.add_argument("--threshold", type=_fraction, help="pass threshold, 0 to 1 (default 1.0)")
    ci.add_argument("--concurrency", type=_positive, default=8, help="agent calls at once")
    ci.add_argument("--batch-size", type=_positive, default=500, help="results per POST")
    ci.add_argument("--timeout", type=float, default=30.0, help="seconds per agent call")
    ci.add_argument("--junit", help="write JUnit XML here")
    ci.set_defaults(handler=_cmd_ci)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(prog="agentlasso", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser("dev", help="run the whole platform on this machine")
    dev.add_argument("--data-dir", default=".agentlasso", help="where embedded data is kept")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--port", type=int, default=8000)
    dev.set_defaults(handler=_cmd_dev)

    api = commands.add_parser("api", help="serve the HTTP API")
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=8000)
    api.add_argument("--log-level", default="info")
    api.set_defaults(handler=_cmd_api)

    worker = commands.add_parser("worker", help="run a worker process")
    worker.add_argument("--concurrency", type=int, default=100)
    worker.set_defaults(handler=_cmd_worker)

    migrate = commands.add_parser("migrate", help="apply database migrations")
    migrate.set_defaults(handler=_cmd_migrate)

    keys = commands.add_parser("keys", help="manage API keys")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="create a project key")
    create.add_argument("--project", required=True)
    create.set_defaults(handler=_cmd_keys_create)
    revoke = key_commands.add_parser("revoke", help="revoke a key by its prefix")
    revoke.add_argument("key_prefix")
    revoke.set_defaults(handler=_cmd_keys_revoke)

    secret_key = commands.add_parser(
        "secret-key",
        help="print a new AGENTLASSO_SECRET_KEY",
        description="Prints a new random key (32 bytes, base64) for AGENTLASSO_SECRET_KEY, which"
        " encrypts agent headers at rest. Give the API and every worker the same key.",
    )
    secret_key.set_defaults(handler=_cmd_secret_key)

    _add_ci(commands)
    _add_run(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `agentlasso` console script."""
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
