"""What the benchmarks share: a fresh database, the API as a real process, its memory."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec

from agentlasso.config import load_settings
from tests.support.databases import drop_database, fresh_database, new_project_key
from tests.support.processes import ROOT, agentlasso, api_process


@contextlib.contextmanager
def server_urls() -> Iterator[tuple[str, str]]:
    """DATABASE_URL / REDIS_URL when set, else embedded servers for the benchmark."""
    database_url, redis_url = os.environ.get("DATABASE_URL"), os.environ.get("REDIS_URL")
    if database_url and redis_url:
        yield database_url, redis_url
        return
    from agentlasso.devstack.services import remove_embedded_data, start_embedded_services

    data_dir = Path(tempfile.mkdtemp(prefix="agentlasso-bench-"))
    try:
        with start_embedded_services(
            data_dir, database_url=database_url, redis_url=redis_url
        ) as services:
            yield services.database_url, services.redis_url
    finally:
        remove_embedded_data(data_dir)


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory (VmRSS) or its peak so far (VmHWM) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for pid {pid}")


def run_against_api(benchmark: Callable[[str, int, str, int], None], default_cases: int) -> None:
    """Parse `--cases`, start a fresh database and `agentlasso api`, run the benchmark on them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=default_cases)
    cases = parser.parse_args().cases
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        try:
            with api_process(database_url, redis_url) as (base_url, pid):
                benchmark(base_url, pid, new_key(database_url), cases)
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


def new_key(database_url: str) -> str:
    """A key of a new project, for a benchmark's requests."""
    return asyncio.run(new_project_key(database_url, "bench"))


def sample_case(number: int, *, expectation: bool = True) -> dict[str, Any]:
    case: dict[str, Any] = {
        "input": f"Order #{number} arrived broken, I want my money back",
        "checks": [
            {"type": "tool_called", "tool": "orders.lookup"},
            {
                "type": "tool_order",
                "tools": ["orders.lookup", "stripe.refund"],
                "severity": "minor",
            },
            {"type": "tool_not_called", "tool": "orders.cancel"},
            {"type": "output_contains", "value": "3-5 business days"},
            {"type": "output_not_contains", "value": r"\b(?:\d[ -]?){13,16}\b", "regex": True},
            {"type": "output_valid_json", "severity": "minor"},
        ],
    }
    if expectation:
        case["expected_output"] = "Confirms the refund amount"
    return case


def body_chunks(
    cases: int, lines_per_chunk: int = 2_000, *, expectation: bool = True
) -> Iterator[bytes]:
    """A JSON Lines import of `cases` sample cases, in chunks of lines."""
    encoder = msgspec.json.Encoder()
    for start in range(0, cases, lines_per_chunk):
        stop = min(start + lines_per_chunk, cases)
        yield b"".join(
            encoder.encode(sample_case(n, expectation=expectation)) + b"\n"
            for n in range(start, stop)
        )


async def imported_dataset(client: httpx.AsyncClient, cases: int) -> str:
    """A new dataset of `cases` sample cases (no expectation); its id."""
    dataset = (await client.post("/api/v1/datasets", json={"name": "bench"})).json()
    imported = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=b"".join(body_chunks(cases, expectation=False)),
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text[:300]
    return str(dataset["id"])


@contextlib.contextmanager
def worker_process(env: dict[str, str], concurrency: int, log: Path | None = None) -> Iterator[int]:
    """One `agentlasso worker`, its log written to `log` (else dropped); yields its pid."""
    argv = agentlasso("worker", "--concurrency", str(concurrency))
    env = {**os.environ, **env}
    with open(log, "wb") if log else open(os.devnull, "wb") as stderr:
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=stderr)
        try:
            yield process.pid
        finally:
            process.terminate()
            process.wait(timeout=30)


def slots_for(concurrency: int) -> int:
    """A worker's call slots that let one project's run have all its concurrency: a project
    holds at most its share of a worker's slots (AGENTLASSO_PROJECT_SHARE, 0.8 by default),
    so an operator sizes workers above the largest run's concurrency by that much."""
    return math.ceil(concurrency / load_settings().project_share)


@contextlib.contextmanager
def delayed_agent(delay_ms: float, reply_bytes: int = 0) -> Iterator[str]:
    """The fake agent of tests/perf/delayed_agent.py in its own process; yields its URL."""
    with _served("tests.perf.delayed_agent", str(delay_ms), str(reply_bytes)) as port:
        yield f"http://127.0.0.1:{port}/agent"


@contextlib.contextmanager
def delayed_model(delay_ms: float) -> Iterator[str]:
    """The fake model of tests/perf/delayed_model.py in its own process; yields its base URL."""
    with _served("tests.perf.delayed_model", str(delay_ms)) as port:
        yield f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def _served(module: str, *args: str) -> Iterator[int]:
    """A server module run in its own process, which prints its port first; yields the port."""
    argv = [sys.executable, "-m", module, *args]
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline())
    finally:
        process.terminate()
        process.wait(timeout=10)


# A page benchmark times pages, not the limits on them: one signed-in client asks for pages far
# faster than a person (issue 23's per-session rate, the project's rate, the preview quota).
UNLIMITED = {
    name: "1000000"
    for name in (
        "AGENTLASSO_WEB_RATE_LIMIT_PER_S", "AGENTLASSO_WEB_RATE_LIMIT_BURST",
        "AGENTLASSO_RATE_LIMIT_PER_S", "AGENTLASSO_RATE_LIMIT_BURST",
        "AGENTLASSO_QUOTA_PREVIEW_CALLS_PER_MIN", "AGENTLASSO_QUOTA_AGENT_HOST_CALLS_PER_MIN",
    )
}  # fmt: skip
