"""How long `agentlasso dev` takes to answer GET /ready with 200, cold and warm.

Cold: an empty data dir (initdb, migrations, first key). Warm: a second start on the same dir.
DATABASE_URL and REDIS_URL are removed from the environment, so the embedded servers start.

    .venv/bin/python tests/perf/bench_dev_start.py [--runs N]
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentlasso.devstack import remove_embedded_data
from agentlasso.devstack.ports import LOOPBACK, free_port

READY_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 90.0
POLL_INTERVAL_S = 0.02


def answers_ready(port: int) -> bool:
    """Whether GET /ready on the port answers 200."""
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=1.0)
    try:
        connection.request("GET", "/ready")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def seconds_to_ready(data_dir: Path) -> float:
    """Start `agentlasso dev`, time it to the first 200 from /ready, then stop it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    argv = [sys.executable, "-m", "agentlasso.cli", "dev", "--data-dir", str(data_dir)]
    output_path = data_dir.parent / "dev.out"
    started = time.perf_counter()
    with output_path.open("ab") as output:
        process = subprocess.Popen(
            [*argv, "--port", str(port)], stdout=output, stderr=subprocess.STDOUT, env=env
        )
    try:
        while not answers_ready(port):
            if process.poll() is not None or time.perf_counter() - started > READY_TIMEOUT_S:
                raise SystemExit(f"dev did not become ready:\n{output_path.read_text()}")
            time.sleep(POLL_INTERVAL_S)
        return time.perf_counter() - started
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=STOP_TIMEOUT_S)


def one_round() -> tuple[float, float]:
    """A cold start, then a warm start on the same data dir."""
    data_dir = Path(tempfile.mkdtemp(prefix="agentlasso-bench-")) / "data"
    try:
        return seconds_to_ready(data_dir), seconds_to_ready(data_dir)
    finally:
        remove_embedded_data(data_dir)
        shutil.rmtree(data_dir.parent)


def main() -> None:
    """Run the rounds and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    cold: list[float] = []
    warm: list[float] = []
    for number in range(1, runs + 1):
        cold_s, warm_s = one_round()
        cold.append(cold_s)
        warm.append(warm_s)
        print(f"run {number}: cold {cold_s:.2f} s, warm {warm_s:.2f} s", flush=True)
    print(f"cold start to /ready 200: median {statistics.median(cold):.2f} s over {runs} runs")
    print(f"warm start to /ready 200: median {statistics.median(warm):.2f} s over {runs} runs")


if __name__ == "__main__":
    main()
