"""`agentlasso dev`: the whole platform on this machine, until Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import logging
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from agentlasso.config import Settings, given_text
from agentlasso.devstack.demo import DemoIds, seed_demo
from agentlasso.devstack.ports import LOOPBACK, free_port, preferred_or_free_port
from agentlasso.devstack.processes import ChildProcess, ServiceStartError, spawn, wait_until
from agentlasso.devstack.services import EmbeddedServices, start_embedded_services

logger = logging.getLogger(__name__)

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_API_READY_TIMEOUT_S = 120.0  # a cold import of the API on a slow machine takes a while
_API_STOP_GRACE_S = 15.0  # the API's own graceful shutdown gives requests 10 s
_WORKER_STOP_GRACE_S = 15.0  # arq cancels running jobs and re-queues them on SIGTERM
_SUPERVISE_INTERVAL_S = 0.2


@dataclass(frozen=True)
class Platform:
    """What a developer needs to reach the running platform."""

    base_url: str
    api_key: str
    services: EmbeddedServices
    worker_metrics_port: int


def run_dev(data_dir: Path, host: str, port: int) -> int:
    """Run the platform until Ctrl-C or SIGTERM (0), or until a part of it dies (1)."""
    logging.basicConfig(level=logging.INFO, format="agentlasso dev: %(message)s")
    with _signals_raise_keyboard_interrupt():
        return _run_until_stopped(data_dir.resolve(), host, port)


def _run_until_stopped(data_dir: Path, host: str, port: int) -> int:
    running = contextlib.ExitStack()
    try:
        children = _start_platform(data_dir, host, port, running)
        return _supervise(children)
    except KeyboardInterrupt:
        logger.info("stopping")
        return 0
    except ServiceStartError as exc:
        logger.error("%s", exc)
        return 1
    finally:
        # A second Ctrl-C must not cut short the orderly stop: API, worker, Valkey, PostgreSQL.
        _ignore_stop_signals()
        running.close()


def _start_platform(
    data_dir: Path, host: str, port: int, running: contextlib.ExitStack
) -> list[ChildProcess]:
    """Start every part, registering each stop on `running`; the children to watch."""
    data_dir.mkdir(parents=True, exist_ok=True)
    services = running.enter_context(_backing_services(data_dir))
    database_url = services.database_url
    _apply_migrations(database_url)
    api_key = _dev_api_key(database_url, data_dir)
    env = _child_env(services, _dev_secret_key(data_dir / "secret-key"))
    # Registered before the API so that the API, registered last, stops first.
    metrics_port = free_port()
    worker = _spawn_worker(env, metrics_port)
    running.callback(worker.stop)
    api, base_url = _spawn_api(env, host, port)
    running.callback(api.stop)
    children = [api, worker, *services.children]
    _wait_for_api(base_url, children)
    demo = seed_demo(base_url, api_key, data_dir / "demo.json")
    sign_in = f"{base_url}/login?token={_dev_sign_in_token(database_url)}"
    _print_banner(Platform(base_url, api_key, services, metrics_port), demo, sign_in)
    return children


def _backing_services(data_dir: Path) -> EmbeddedServices:
    """The database and Redis from the environment, or embedded servers for those missing."""
    database_url = given_text(Settings, "database_url")
    redis_url = given_text(Settings, "redis_url")
    for name, url in (("DATABASE_URL", database_url), ("REDIS_URL", redis_url)):
        if url is None:
            logger.info("%s is not set: starting an embedded server in %s", name, data_dir)
        else:
            logger.info("using %s from the environment", name)
    return start_embedded_services(data_dir, database_url=database_url, redis_url=redis_url)


def _apply_migrations(database_url: str) -> None:
    from agentlasso.db.migrations import apply_migrations

    applied = asyncio.run(apply_migrations(database_url))
    logger.info("migrations: %s", ", ".join(applied) if applied else "up to date")


def _dev_api_key(database_url: str, data_dir: Path) -> str:
    from agentlasso.devstack.bootstrap import ensure_dev_key

    return asyncio.run(ensure_dev_key(database_url, data_dir / "dev-api-key"))


def _dev_sign_in_token(database_url: str) -> str:
    from agentlasso.devstack.bootstrap import dev_sign_in_token

    return asyncio.run(dev_sign_in_token(database_url))


def _dev_secret_key(key_file: Path) -> str:
    """The key kept in `key_file`, created (readable by its owner only) on the first start."""
    from agentlasso.devstack.bootstrap import make_private, write_private
    from agentlasso.secrets_box import generate_key

    if key_file.exists():
        make_private(key_file)
        return key_file.read_text(encoding="utf-8").strip()
    key = generate_key()
    write_private(key_file, key)
    logger.info("generated a secret key for agent headers in %s", key_file)
    return key


def _child_env(services: EmbeddedServices, secret_key: str) -> dict[str, str]:
    """The environment of the API and the worker."""
    return {
        **os.environ,
        "DATABASE_URL": services.database_url,
        "REDIS_URL": services.redis_url,
        # Encrypts agent headers at rest; kept in the data directory so they stay readable.
        "AGENTLASSO_SECRET_KEY": secret_key,
        # Agents under test usually run on this machine while developing.
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
        # The API serves the demo support bot the seeded demo agent points at.
        "AGENTLASSO_DEMO_AGENT": "1",
        "PYTHONUNBUFFERED": "1",
        # The developer's terminal, whatever the shell exports.
        "AGENTLASSO_LOG_FORMAT": "text",
        # The worker's metrics port is for this machine only.
        "AGENTLASSO_METRICS_HOST": "127.0.0.1",
    }


def _spawn_worker(env: dict[str, str], metrics_port: int) -> ChildProcess:
    argv = [sys.executable, "-m", "agentlasso.cli", "worker", "--metrics-port", str(metrics_port)]
    return spawn("worker", argv, env=env, grace_s=_WORKER_STOP_GRACE_S)


def _spawn_api(env: dict[str, str], host: str, port: int) -> tuple[ChildProcess, str]:
    """Start the API on `port`, or on a free port if that one is taken; the API and its URL."""
    api_port = preferred_or_free_port(host, port)
    if port and api_port != port:
        logger.warning("port %d is taken: the API listens on %d instead", port, api_port)
    base_url = f"http://{_client_host(host)}:{api_port}"
    # Runs link to their pages at the address the banner prints, unless the developer set one
    # (a tunnel, a proxy in front).
    public_url = env.get("AGENTLASSO_PUBLIC_URL") or base_url
    argv = [sys.executable, "-m", "agentlasso.cli", "api", "--host", host, "--port", str(api_port)]
    api_env = {**env, "AGENTLASSO_PUBLIC_URL": public_url}
    api = spawn("api", argv, env=api_env, grace_s=_API_STOP_GRACE_S)
    return api, base_url


def _client_host(host: str) -> str:
    """Where a client on this machine reaches a server bound to `host`."""
    if host in ("", "0.0.0.0", "::"):  # noqa: S104
        return LOOPBACK
    return f"[{host}]" if ":" in host else host


def _wait_for_api(base_url: str, children: Sequence[ChildProcess]) -> None:
    wait_until(
        lambda: _answers_ready(base_url),
        what=f"the API at {base_url}",
        watched=children,
        timeout_s=_API_READY_TIMEOUT_S,
        interval_s=0.1,
    )


def _answers_ready(base_url: str) -> bool:
    """Whether GET /ready answers 200 (http.client: no proxy from the environment)."""
    connection = http.client.HTTPConnection(base_url.removeprefix("http://"), timeout=2.0)
    try:
        connection.request("GET", "/ready")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def _print_banner(platform: Platform, demo: DemoIds, sign_in: str) -> None:
    from agentlasso.devstack.bootstrap import DEV_OWNER_EMAIL

    key, url = platform.api_key, platform.base_url
    lines = [
        "",
        f"Open {sign_in}",
        f"  and press Sign in: you are {DEV_OWNER_EMAIL}, owner of the demo organisation"
        " (the link signs in once, within 10 minutes).",
        f"AgentLasso is running at {url}",
        f"  API key:  {key}",
        f'  Try:      curl -H "x-api-key: {key}" {url}/api/v1/datasets',
        "  Run the demo dataset against the demo support bot (one case fails on purpose):",
        f"    AGENTLASSO_URL={url} AGENTLASSO_API_KEY={key} {_this_command()} run"
        f" --dataset {demo.dataset_id} --agent {demo.agent_id} --wait",
    ]
    lines.append(
        f"  Metrics:  {url}/metrics (API), "
        f"http://127.0.0.1:{platform.worker_metrics_port}/metrics (worker)"
    )
    if platform.services.postgres_data_dir is not None:
        lines.append(f"  Database: {platform.services.database_url}")
    if any(child.name == "valkey" for child in platform.services.children):
        lines.append(f"  Redis:    {platform.services.redis_url}")
    lines += ["Press Ctrl-C to stop.", ""]
    print("\n".join(lines), flush=True)


def _this_command() -> str:
    """`agentlasso` as the shell that started dev can run it: by its full path, since the
    venv's bin/ is usually not on that shell's PATH (the README's first command does not put
    it there)."""
    installed = Path(sys.executable).with_name("agentlasso")
    return shlex.quote(str(installed)) if installed.exists() else "agentlasso"


def _supervise(children: Sequence[ChildProcess]) -> int:
    """Wait for a stop signal (raised as KeyboardInterrupt); 1 if a child dies first."""
    while True:
        for child in children:
            if child.exited:
                logger.error("%s; stopping the rest", child.exit_report())
                return 1
        time.sleep(_SUPERVISE_INTERVAL_S)


@contextlib.contextmanager
def _signals_raise_keyboard_interrupt() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into KeyboardInterrupt too, for the length of the block."""
    previous = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _raise_keyboard_interrupt)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _ignore_stop_signals() -> None:
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
