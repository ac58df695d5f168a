"""`agentlasso dev` run as a developer runs it: its banner read for the URL and the key."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from agentlasso.devstack.ports import free_port
from tests.support.waiting import WaitTimeout, wait_until

BANNER_TIMEOUT_S = 180.0  # a cold start on a loaded 2-core machine, with margin
STOP_TIMEOUT_S = 90.0  # the sum of every child's grace period, with margin
# The checkout's own interpreter, as `python -m`; a test of an installed wheel passes its script.
CHECKOUT_COMMAND = (sys.executable, "-m", "agentlasso.cli")


@dataclass
class DevRun:
    """A running `agentlasso dev` and what it printed."""

    process: subprocess.Popen[bytes]
    output_path: Path
    base_url: str = ""
    api_key: str = ""

    def output(self) -> str:
        """Everything it (and its children) printed so far."""
        return self.output_path.read_text(errors="replace")

    def stop(self, signum: signal.Signals, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """Send `signum` and wait for the command to exit; its exit code."""
        self.process.send_signal(signum)
        return self.process.wait(timeout=timeout_s)


def env_without_services(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (this environment by default) minus DATABASE_URL and REDIS_URL, so dev starts
    embedded servers."""
    hidden = {"DATABASE_URL", "REDIS_URL"}
    return {name: value for name, value in (env or os.environ).items() if name not in hidden}


def start_dev(
    data_dir: Path,
    output_path: Path,
    command: Sequence[str] = CHECKOUT_COMMAND,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> DevRun:
    """Start `agentlasso dev` and wait for its banner."""
    argv = [*command, "dev", "--data-dir", str(data_dir)]
    with output_path.open("wb") as output:
        process = subprocess.Popen(
            [*argv, "--port", str(free_port())],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env_without_services(env),
            cwd=cwd,
        )
    run = DevRun(process, output_path)
    _wait_for_banner(run)
    return run


def _wait_for_banner(run: DevRun) -> None:
    def banner_shown() -> bool:
        assert run.process.poll() is None, f"dev exited early:\n{run.output()}"
        return "Press Ctrl-C to stop." in run.output()

    try:
        wait_until(banner_shown, BANNER_TIMEOUT_S, what="the dev banner", every_s=0.1)
    except WaitTimeout:
        raise AssertionError(f"no banner after {BANNER_TIMEOUT_S} s:\n{run.output()}") from None
    url = re.search(r"AgentLasso is running at (\S+)", run.output())
    key = re.search(r"API key:\s+(\S+)", run.output())
    assert url, run.output()
    assert key, run.output()
    run.base_url, run.api_key = url.group(1), key.group(1)


def http_client(run: DevRun) -> httpx.Client:
    """A client for the API it started, authenticated with the key it printed."""
    return httpx.Client(
        base_url=run.base_url, headers={"x-api-key": run.api_key}, timeout=30, trust_env=False
    )
