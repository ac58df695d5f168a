"""Child processes that die with their parent, started and stopped one by one."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_LOG_TAIL_LINES = 15


class ServiceStartError(RuntimeError):
    """A part of the local stack could not be started, or stopped while it was needed."""


@dataclass(frozen=True)
class RunAs:
    """A system user to run a child as (PostgreSQL refuses to run as root)."""

    name: str
    uid: int
    gid: int


@dataclass
class ChildProcess:
    """A running child, with how to stop it and where its output goes."""

    name: str
    popen: subprocess.Popen[bytes]
    stop_signal: signal.Signals = signal.SIGTERM
    grace_s: float = 10.0
    log_path: Path | None = None

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.popen.pid

    @property
    def exited(self) -> bool:
        """Whether the child has exited (and been reaped)."""
        return self.popen.poll() is not None

    def stop(self) -> None:
        """Ask the child to stop; kill it if it is still running after its grace period."""
        if self.exited:
            return
        self.popen.send_signal(self.stop_signal)
        try:
            self.popen.wait(timeout=self.grace_s)
        except subprocess.TimeoutExpired:
            logger.warning("%s did not stop within %.0f s; killing it", self.name, self.grace_s)
            self.popen.kill()
            self.popen.wait()

    def exit_report(self) -> str:
        """How the child ended, with the end of its log when it has one."""
        report = f"{self.name} (pid {self.pid}) {describe_exit_code(self.popen.returncode)}"
        if self.log_path is None:
            return report
        return f"{report}; the end of {self.log_path}:\n{log_tail(self.log_path)}"


def describe_exit_code(code: int | None) -> str:
    """`exited with code N`, or the signal that killed the process."""
    if code is None:
        return "is still running"
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """The last lines of a log file, or a note that it cannot be read."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(cannot read it: {exc})"
    return "\n".join(text.splitlines()[-lines:])


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A preexec_fn asking the kernel to SIGKILL the child when this process dies."""
    if not sys.platform.startswith("linux"):
        return None
    # Resolved before fork: loading a library in the forked child is not safe.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent_pid = os.getpid()

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        # The parent may have died between fork and prctl: no signal would come then.
        if os.getppid() != parent_pid:
            os._exit(1)

    return die_with_parent


def spawn(
    name: str,
    argv: Sequence[str | Path],
    *,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    run_as: RunAs | None = None,
    stop_signal: signal.Signals = signal.SIGTERM,
    grace_s: float = 10.0,
) -> ChildProcess:
    """Start a long-running child that dies with this process (call from the main thread)."""
    # PDEATHSIG fires when the thread that forked the child ends, hence the main thread.
    log_file = log_path.open("ab") if log_path is not None else None
    try:
        popen = subprocess.Popen(
            [str(arg) for arg in argv],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT if log_file is not None else None,
            env=env,
            # Its own process group: a Ctrl-C in the terminal reaches only us, and we stop
            # the children in order.
            process_group=0,
            user=run_as.uid if run_as else None,
            group=run_as.gid if run_as else None,
            extra_groups=[] if run_as else None,
            preexec_fn=_die_with_parent_hook(),
        )
    finally:
        if log_file is not None:
            log_file.close()
    logger.debug("started %s (pid %d): %s", name, popen.pid, " ".join(map(str, argv)))
    return ChildProcess(name, popen, stop_signal, grace_s, log_path)


def run_to_completion(
    argv: Sequence[str | Path],
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    run_as: RunAs | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a short-lived command that dies with this process; return its exit code and output."""
    return subprocess.run(
        [str(arg) for arg in argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        user=run_as.uid if run_as else None,
        group=run_as.gid if run_as else None,
        extra_groups=[] if run_as else None,
        preexec_fn=_die_with_parent_hook(),
        check=False,
    )


def wait_until(
    ready: Callable[[], bool],
    *,
    what: str,
    watched: Sequence[ChildProcess],
    timeout_s: float,
    interval_s: float = 0.05,
) -> None:
    """Poll `ready` until it holds; raise if a watched child exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        for child in watched:
            if child.exited:
                raise ServiceStartError(child.exit_report())
        if time.monotonic() > deadline:
            raise ServiceStartError(f"{what} was not ready after {timeout_s:.0f} s")
        time.sleep(interval_s)


def stop_in_order(children: Sequence[ChildProcess]) -> None:
    """Stop each child in turn, waiting for each before the next."""
    for child in children:
        child.stop()
